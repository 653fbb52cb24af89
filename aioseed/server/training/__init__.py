"""Train batches into parameter updates.

In: a ``TrainBatch`` from a ``Source``. ``trainer`` prefetches batches and runs the agent's train
step in a thread, counting the parameter version per update and the policy lag, and tells the
source (priorities) and pacing (acting may go on) after each step. ``checkpoint`` saves and
restores the agent and the counters between steps. Out: new parameters, read by acting's next batch
(or published to IMPALA-mode actors), and the step's metrics.
"""
