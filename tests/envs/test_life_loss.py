"""--atari.episodic-life on real Breakout: a lost life ends the training episode (a LIFE_LOST row), the game
plays on with FIRE relaunching the ball, and the learner's EnvTable counts whole games."""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest

from aioseed.clients.env_group import EnvGroup
from aioseed.envs.atari import AtariConfig, make_atari_vector_env, relaunch_action
from aioseed.envs.envpool_backend import make_envpool_vector_env
from aioseed.envs.life_loss import LIFE_LOST_INFO
from aioseed.envs.registry import env_spec
from aioseed.envs.rendering import rendering_vector_env
from aioseed.server.acting.env_table import EnvTable
from aioseed.server.acting.frame_stack import FrameStacker
from aioseed.types import FINAL, LIFE_LOST, TERMINATED

BREAKOUT = "ALE/Breakout-v5"
LIVES = 5
STEPS = 3000
"""NOOP-only play loses a life within a few hundred steps once the ball is in play."""

Make = Callable[[AtariConfig], gym.vector.VectorEnv]
BACKENDS: dict[str, Make] = {
    "ale-py vector env": lambda config: make_atari_vector_env(BREAKOUT, 2, config),
    "rendering frames": lambda config: rendering_vector_env(BREAKOUT, 2, config),
    "envpool": lambda config: make_envpool_vector_env(BREAKOUT, 2, config),
}


def _config(episodic_life: bool) -> AtariConfig:
    return AtariConfig(noop_max=0, sticky_action_probability=0.0, stack=1, episodic_life=episodic_life)


def test_the_relaunch_is_fire_where_the_game_has_it() -> None:
    assert relaunch_action(BREAKOUT, _config(True)) == 1
    assert relaunch_action("ALE/Pong-v5", AtariConfig(fire_reset=False)) == 0


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_games_play_on_across_lost_lives_and_the_learner_counts_whole_games(backend: str) -> None:
    """NOOP-only play: the ball is lost at every life, and only the relaunch (FIRE) brings it back, so a game
    that ends at all proves the relaunch; each game gives four LIFE_LOST rows, then its termination."""
    config = _config(True)
    group = EnvGroup(BACKENDS[backend](config), env_spec(BREAKOUT, config), np.array([11, 12], np.uint64), seed=3)
    table, stacker, slots = EnvTable(), FrameStacker(4), np.array([0, 1], np.int32)
    lives_lost, game_rewards, games = np.zeros(2, int), np.zeros(2), [[], []]
    for _ in range(STEPS):
        flags, rewards = group.flags.copy(), group.rewards.copy()
        marks = table.observe(slots, group.run_ids, rewards, flags)
        lost = flags == LIFE_LOST | FINAL | TERMINATED
        assert (marks.done[lost] & marks.phantom[lost]).all()  # a terminal transition into a phantom row
        stacked = stacker.push(slots, group.observations, marks.starts)
        restarted = marks.starts & (lives_lost > 0) & ~marks.fresh
        for env in np.flatnonzero(restarted):  # the row after a lost life: a fresh stack, its first frame alone
            assert not stacked[env, :-1].any() and stacked[env, -1].any()
        game_rewards += np.where(marks.fresh, 0.0, rewards)
        for row, value in zip(marks.ended_rows, marks.episode_returns):
            env = slots[row]
            games[env].append((lives_lost[env], value, game_rewards[env]))
            lives_lost[env], game_rewards[env] = 0, 0.0
        lives_lost += lost
        if all(games):
            break
        group.step(np.zeros(2, np.int32))
    assert all(games), f"no game ended in {STEPS} NOOP steps: the ball was not relaunched after a lost life"
    for env in (0, 1):
        lost_before_end, episode_return, rewards_seen = games[env][0]
        assert lost_before_end == LIVES - 1  # the fifth life's loss is the game's own termination
        assert episode_return == rewards_seen  # the whole game's return, across its lives
    group.close()


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_the_envs_own_frame_stack_restarts_after_a_lost_life(backend: str) -> None:
    """With the env stacking (actor side), the first observation of a new life holds that life's frame alone, as
    the learner's FrameStacker has it: before, it held the three frames before the life was lost."""
    envs = BACKENDS[backend](AtariConfig(noop_max=0, sticky_action_probability=0.0, stack=4, episodic_life=True))
    envs.reset(seed=3)
    for _ in range(STEPS):
        observations, _, _, _, infos = envs.step(np.zeros(2, np.int32))
        if infos[LIFE_LOST_INFO][0]:
            break
    assert infos[LIFE_LOST_INFO][0], f"no life lost in {STEPS} NOOP steps"
    assert observations[0, :-1].any()  # the final row of the lost life keeps its stack
    for kept in (1, 2, 3, 4):  # the relaunch, then each step brings back one more frame of the new life
        observations, _, terminated, truncated, _ = envs.step(np.zeros(2, np.int32))
        assert not (terminated[0] or truncated[0])
        assert not observations[0, : 4 - kept].any(), kept
        assert all(observations[0, frame].any() for frame in range(4 - kept, 4)), kept
    envs.close()


def test_without_episodic_life_a_lost_ball_stays_lost() -> None:
    """The contrast that makes the test above mean something: no relaunch, no LIFE_LOST rows, no game over."""
    config = _config(False)
    group = EnvGroup(make_atari_vector_env(BREAKOUT, 2, config), env_spec(BREAKOUT, config), np.array([1, 2], np.uint64), seed=3)
    for _ in range(STEPS):
        group.step(np.zeros(2, np.int32))
        assert not group.flags.any()
    group.close()
