"""Per-env history into train batches; free of TensorFlow and gRPC.

In: one ``Step`` per env per inference batch (``unroll_store`` keeps ``unroll_length + 1`` steps per
env and emits overlapping ``Unroll`` records). ``pacing`` says how far acting may run ahead of
training (async, bounded, synchronous). Out: a ``TrainBatch`` from a ``Source``: the bounded unroll
queue for V-trace (``source``), or prioritized sequence replay over a sum tree for R2D2
(``replay``, ``sum_tree``, ``replay_feed``). ``stamps`` tells which checkpoint a saved replay (or episode
window) goes with.
"""
