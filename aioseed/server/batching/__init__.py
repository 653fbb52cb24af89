"""Rows from many streams into inference batches; free of TensorFlow and gRPC.

In: ``Rows`` submitted by the streams. Out: a ``Batch`` for the inference loop, which closes at
``max_batch_size`` rows, at ``deadline_ms`` after its first row, or once every connected env is
waiting (``batcher``), and whose outputs go back to each submitter's future. Beside it: the
action latencies in log buckets (``latency``) and the batch-size tuner that reads them
(``autotune``, ``tuner_measure``).
"""
