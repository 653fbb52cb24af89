"""Batches through the policy: actions out, per-env history kept.

In: a closed ``Batch`` of rows. ``inference`` runs each batch in a worker thread (TensorFlow
releases the GIL), where ``step`` marks episode boundaries (``env_table``), stacks frames on the
learner (``frame_stack``), reads and writes each env's recurrent state (``core_states``), runs
the policy and appends the ``Step`` to the per-env unroll store. Out: actions to the batch's
streams, and completed ``Unroll`` records to trajectories, at the pace trajectories allows.
"""
