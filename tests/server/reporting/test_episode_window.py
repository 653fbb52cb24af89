"""The episode window a checkpoint keeps: written whole, read back all or nothing."""

from __future__ import annotations

import json

import numpy as np

from aioseed.server.reporting.episode_window import FILE, EpisodeWindow
from aioseed.server.reporting.stats import Stats
from aioseed.server.training.trainer import Progress


def played(window: int, returns: list[float]) -> Stats:
    stats = Stats(window)
    stats.record_episodes(np.array(returns), np.arange(1, len(returns) + 1))
    stats.record_episodes(np.array([-5.0]), np.array([7]), evaluation=np.array([True]))
    return stats


def test_a_saved_window_comes_back_and_a_smaller_window_keeps_the_latest(tmp_path) -> None:
    before = played(4, [1.0, 2.0, 3.0, 4.0, 5.0])
    assert EpisodeWindow(before).save(tmp_path / "episodes") > 0
    after = Stats(4)
    assert EpisodeWindow(after).restore(tmp_path / "episodes")
    assert after.episode_state() == before.episode_state()
    assert (after.episodes, after.mean_return(), after.full_window()) == (5, 3.5, True)
    assert list(after.eval_returns) == [-5.0] and list(after.lengths) == [2, 3, 4, 5]
    smaller = Stats(2)
    assert EpisodeWindow(smaller).restore(tmp_path / "episodes")
    assert list(smaller.returns) == [4.0, 5.0] and smaller.episodes == 5


def test_a_missing_or_damaged_window_leaves_a_new_runs_empty_one(tmp_path) -> None:
    stats = Stats(4)
    assert not EpisodeWindow(stats).restore(tmp_path / "episodes")  # a checkpoint from before this file existed
    (tmp_path / "episodes").mkdir()
    state = played(4, [1.0, 2.0]).episode_state()
    for damaged in ("{not json", json.dumps({**state, "returns": ["x"]}), json.dumps({**state, "episodes": None}), "[]"):
        (tmp_path / "episodes" / FILE).write_text(damaged)
        assert not EpisodeWindow(stats).restore(tmp_path / "episodes")
        assert (stats.episodes, len(stats.returns), len(stats.lengths)) == (0, 0, 0)  # nothing half-restored


def test_a_window_newer_than_the_checkpoint_restored_is_left_out_and_an_older_one_comes_back(tmp_path) -> None:
    """Returns the restored weights never earned would reach the curves and a return stop."""
    before = played(4, [1.0, 2.0, 3.0])
    EpisodeWindow(before).save(tmp_path / "episodes", Progress(train_steps=20, frames=500))
    rolled_back = Stats(4)
    assert not EpisodeWindow(rolled_back).restore(tmp_path / "episodes", Progress(train_steps=10, frames=300))
    assert (rolled_back.episodes, len(rolled_back.returns)) == (0, 0)
    for progress in (Progress(train_steps=20, frames=500), Progress(train_steps=30, frames=800), None):
        after = Stats(4)
        assert EpisodeWindow(after).restore(tmp_path / "episodes", progress) and after.episode_state() == before.episode_state()
