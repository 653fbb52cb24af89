"""The learner's metrics: counters kept on the event loop (``stats``), snapshots once an interval
into a bounded history, and what reads them: the progress log line (``reporter``) and TensorBoard
(``summaries``). The console and Prometheus read the same history through ``Control``.
"""
