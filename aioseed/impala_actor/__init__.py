"""IMPALA mode's actor: the baseline SEED is measured against.

The actor pulls the learner's parameters (versioned), runs the policy on its own CPU for every
step, assembles unrolls exactly as a SEED learner would (``aioseed.server.acting.step``) and uploads
them with their behaviour logits. It loads TensorFlow, so it lives outside ``aioseed.clients``.
"""
