"""aioseed: SEED RL on asyncio.

A grpc.aio learner runs the policy centrally on batched observations streamed by
remote actors, keeps trajectories and recurrent state itself, and trains.
"""

from aioseed.spec import EnvSpec

__all__ = ["EnvSpec"]
__version__ = "0.1.0"
