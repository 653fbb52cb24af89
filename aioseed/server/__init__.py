"""The learner: one process, one event loop, the data path in stages.

    actor ─▶ transport ─▶ batching ─▶ acting ─▶ trajectories ─▶ training
                 ▲                       │                          │
                 └────── actions ────────┘        parameters ◀──────┘

Each stage is a sub-package. The workers (``transport``, ``acting``, ``training``, ``reporting``)
import only the two buffers between them (``batching``: rows waiting for the policy;
``trajectories``: completed unrolls waiting for a train step), never each other; the buffers
import neither TensorFlow nor gRPC. ``learner`` runs the stages (``stages``: the
record ``aioseed.compose.learner`` builds) and their tasks; ``config``, ``stopping`` and ``run_info`` are its
settings, its stop conditions and what it tells the console about the run. The layers are import-linter contracts in pyproject.toml.
"""
