"""Environments, imported by both sides: actors build them, the learner learns their spec.

``registry`` makes any gymnasium id a vector env (``atari``: ALE ids through ale-py's
vector env; ``football``: gfootball scenarios); ``catch`` is the pixel task aioseed
ships, registered with gymnasium on import (``aioseed/Catch-v0``).
"""

from __future__ import annotations

import gymnasium as gym

CATCH_ID = "aioseed/Catch-v0"

if CATCH_ID not in gym.registry:
    gym.register(CATCH_ID, entry_point="aioseed.envs.catch:Catch")

__all__ = ["CATCH_ID"]
