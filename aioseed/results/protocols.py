"""Named evaluation protocols for ``aioseed eval --protocol``: the env settings, the number of episodes
and the policy mode, so that a score says how it was measured.

Atari papers disagree on exactly these settings (sticky actions, no-op starts, the frame cap, the
exploration rate), and their scores cannot be compared without them (Machado et al. 2018, "Revisiting
the Arcade Learning Environment"). Each protocol below is written into the evaluation's JSON result.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

ProtocolName = Literal["none", "seed", "machado"]


@dataclasses.dataclass(frozen=True)
class Protocol:
    """How an evaluation runs: the Atari settings it overrides, its episodes and its policy."""

    name: ProtocolName
    description: str
    episodes: int
    """Episodes run (``--episodes`` overrides it)."""
    sticky_action_probability: float | None = None
    """ALE's repeat-action probability (None: as the policy trained)."""
    noop_max: int | None = None
    """Up to this many no-op actions at each episode's start (None: as trained)."""
    max_episode_frames: int | None = None
    """Emulator frames after which an episode is cut (None: as trained)."""
    r2d2_epsilon: float | None = None
    """R2D2's ε-greedy rate (None: ``--epsilon``). V-trace and SAC sample from the policy."""

    @property
    def atari_only(self) -> bool:
        return self.name != "none"

    def atari_overrides(self) -> dict[str, Any]:
        """The ``AtariConfig`` fields this protocol fixes; an evaluation plays full episodes (no episodic life)."""
        if not self.atari_only:
            return {}
        fields = ("sticky_action_probability", "noop_max", "max_episode_frames")
        return {"episodic_life": False} | {name: getattr(self, name) for name in fields if getattr(self, name) is not None}


PROTOCOLS: dict[str, Protocol] = {
    "none": Protocol(
        "none", "the env as the policy trained on it; episodes and policy from the flags", episodes=10
    ),
    "seed": Protocol(
        "seed",
        "SEED RL's Atari evaluation (Espeholt et al. 2020, after R2D2, Kapturowski et al. 2019): no sticky "
        "actions, up to 30 no-op starts, episodes cut at 108K frames (30 minutes), R2D2 at epsilon 0.001",
        episodes=30,
        sticky_action_probability=0.0,
        noop_max=30,
        max_episode_frames=108_000,
        r2d2_epsilon=0.001,
    ),
    "machado": Protocol(
        "machado",
        "Machado et al. 2018's recommendation: sticky actions 0.25, no no-op starts, full episodes (game over, "
        "up to ALE's 108K-frame cap), R2D2 at epsilon 0.001",
        episodes=100,
        sticky_action_probability=0.25,
        noop_max=0,
        max_episode_frames=108_000,
        r2d2_epsilon=0.001,
    ),
}
"""Every protocol by name (``none``: today's behaviour, the env exactly as trained)."""


def describe(protocol: Protocol, episodes: int, policy: str) -> dict[str, Any]:
    """The protocol as it ran, for the evaluation's JSON result."""
    record = {"name": protocol.name, "description": protocol.description, "episodes": episodes, "policy": policy}
    return record | {k: v for k, v in protocol.atari_overrides().items()}
