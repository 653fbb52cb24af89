"""Football's scoring rate against frames, from a run's episode returns (``curves.episode_returns``).

An episode scored when its return says so. With the scoring reward a goal pays +1 (and one against
-1), so a return above 0.5 is a goal. With checkpoints too, the goal also pays every checkpoint not yet
collected, so an episode with a goal returns exactly 2.0 and one without at most 1.0 (10 zones of 0.1):
the threshold is 1.5. Each controlled player's episode counts once, as the returns do.
"""

from __future__ import annotations

import csv
import dataclasses
import pathlib

GOAL_RETURNS = {"scoring": 0.5, "scoring,checkpoints": 1.5}
"""The return above which an episode scored, by ``FootballConfig.rewards``."""


@dataclasses.dataclass(frozen=True)
class ScoringBin:
    frames_from: int
    frames_to: int
    episodes: int
    scoring_rate: float
    mean_return: float


def scoring_bins(episodes: list[tuple[int, float]], goal_return: float, bin_frames: int) -> list[ScoringBin]:
    """The scoring rate and mean return of the episodes that ended in each ``bin_frames`` span (``episodes``:
    (frames when it ended, return)); spans without an episode are left out."""
    if bin_frames < 1:
        raise ValueError(f"bin_frames must be positive, got {bin_frames}")
    grouped: dict[int, list[float]] = {}
    for frames, value in episodes:
        grouped.setdefault(frames // bin_frames, []).append(value)
    return [
        ScoringBin(
            frames_from=index * bin_frames,
            frames_to=(index + 1) * bin_frames,
            episodes=len(returns),
            scoring_rate=sum(value > goal_return for value in returns) / len(returns),
            mean_return=sum(returns) / len(returns),
        )
        for index, returns in sorted(grouped.items())
    ]


def games_scored(left_returns: list[list[float]], goal_return: float) -> float:
    """The fraction of games whose left side scored (``left_returns``: per game, a return per left-side
    controlled player; a goal pays every one of them, so the first decides)."""
    if not left_returns:
        raise ValueError("no games to count goals in")
    return sum(game[0] > goal_return for game in left_returns) / len(left_returns)


def write_scoring_csv(bins: list[ScoringBin], path: pathlib.Path) -> None:
    """``frames_from, frames_to, player_episodes, scoring_rate, mean_return`` rows."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["frames_from", "frames_to", "player_episodes", "scoring_rate", "mean_return"])
        for b in bins:
            writer.writerow([b.frames_from, b.frames_to, b.episodes, f"{b.scoring_rate:.3f}", f"{b.mean_return:.3f}"])
