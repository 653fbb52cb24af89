"""Football's scoring rate over evaluated games."""

from __future__ import annotations

import pytest

from aioseed.results.scoring import GOAL_RETURNS, games_scored


def test_a_game_scored_when_its_first_left_players_return_passes_the_goal_threshold() -> None:
    # Per game, the left side's players: a goal pays each of them, checkpoints only the ball carrier.
    games = [[2.0, 2.0, 2.0], [0.0, 0.0, 1.0], [0.0, 0.9, 0.0], [2.0, 2.0, 2.0]]
    assert games_scored(games, GOAL_RETURNS["scoring,checkpoints"]) == 0.5
    assert games_scored([[1.0], [-1.0], [0.0]], GOAL_RETURNS["scoring"]) == pytest.approx(1 / 3)


def test_no_games_is_an_error_not_a_rate() -> None:
    with pytest.raises(ValueError, match="no games"):
        games_scored([], GOAL_RETURNS["scoring"])
