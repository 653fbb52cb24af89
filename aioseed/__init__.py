"""aioseed: SEED RL on asyncio.

A grpc.aio learner runs the policy centrally on batched observations streamed by
remote actors, keeps trajectories and recurrent state itself, and trains.
"""

import os

# aioseed starts children by spawn (multiprocessing) or exec (ffmpeg for clips), never uses gRPC in a
# forked child: without this, gRPC logs "skipping fork() handlers" at every clip's ffmpeg start.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from aioseed.spec import EnvSpec  # noqa: E402

__all__ = ["EnvSpec"]
__version__ = "0.1.0"
