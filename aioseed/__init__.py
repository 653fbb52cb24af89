"""aioseed: SEED RL on asyncio.

A grpc.aio learner runs the policy centrally on batched observations streamed by
remote actors, keeps trajectories and recurrent state itself, and trains.
"""

import os

# aioseed starts children by spawn (multiprocessing) or exec (ffmpeg for clips), never uses gRPC in a
# forked child: without this, gRPC logs "skipping fork() handlers" at every clip's ffmpeg start.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

import importlib  # noqa: E402
from typing import Any  # noqa: E402

from aioseed.spec import EnvSpec  # noqa: E402

__all__ = ["EnvSpec", "load_policy"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``aioseed.load_policy`` (``aioseed.compose.policy.load_policy``), imported on first use: ``import aioseed``, which
    every module does for ``__version__``, stays light and loads neither TensorFlow nor the learner."""
    if name == "load_policy":
        return importlib.import_module("aioseed.compose.policy").load_policy
    raise AttributeError(f"module 'aioseed' has no attribute {name!r}")
