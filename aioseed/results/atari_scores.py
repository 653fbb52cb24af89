"""The Atari-57 random and human scores (``atari_scores.csv``, sources cited in its header) and the
human-normalised score: HNS = (score - random) / (human - random)."""

from __future__ import annotations

import csv
import dataclasses
import functools
import importlib.resources


@dataclasses.dataclass(frozen=True)
class Reference:
    game: str
    """snake_case name (``ms_pacman``)."""
    ale_id: str
    """gymnasium id (``ALE/MsPacman-v5``)."""
    random: float
    human: float

    def normalize(self, score: float) -> float:
        return (score - self.random) / (self.human - self.random)


@functools.cache
def references() -> dict[str, Reference]:
    """Every game's reference scores by ALE id (v5)."""
    text = importlib.resources.files(__package__).joinpath("atari_scores.csv").read_text()
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return {
        r["ale_id"]: Reference(game=r["game"], ale_id=r["ale_id"], random=float(r["random"]), human=float(r["human"]))
        for r in rows
    }


def reference(env_id: str) -> Reference | None:
    """The reference scores of an ALE id of any version (``ALE/Pong-v5``, ``ALE/Pong-v4``), else None."""
    family, _, _ = env_id.rpartition("-v")
    return next((r for r in references().values() if r.ale_id.rpartition("-v")[0] == family), None)
