"""Learner-side frame stacking gives the policy exactly what actor-side stacking gives, on real Pong."""

from __future__ import annotations

import numpy as np

from aioseed.clients.env_group import EnvGroup
from aioseed.envs.atari import AtariConfig
from aioseed.envs.registry import env_spec, make_vector_env
from aioseed.server.acting.env_table import EnvTable
from aioseed.server.acting.frame_stack import FrameStacker

PONG = "ALE/Pong-v5"
SHORT = dict(max_episode_frames=4 * 12)  # episodes are truncated every 12 steps


def test_learner_stacking_matches_actor_stacking_across_episode_boundaries() -> None:
    actor_side = AtariConfig(stack=4, **SHORT)
    learner_side = AtariConfig(stack=1, **SHORT)
    run_ids = np.array([5, 6], np.uint64)
    stacked = EnvGroup(make_vector_env(PONG, 2, actor_side), env_spec(PONG, actor_side), run_ids, seed=7)
    single = EnvGroup(make_vector_env(PONG, 2, learner_side), env_spec(PONG, learner_side), run_ids, seed=7)
    assert single.observations.shape == (2, 1, 84, 84)
    envs, stacker = EnvTable(), FrameStacker(4)
    slots = np.array([3, 9], np.int32)
    rng = np.random.default_rng(0)
    boundaries = 0
    for step in range(40):
        marks = envs.observe(slots, run_ids, single.rewards, single.flags)
        starts = (marks.done & ~marks.phantom) | marks.fresh
        boundaries += int(starts.sum())
        np.testing.assert_array_equal(stacker.push(slots, single.observations, starts), stacked.observations)
        np.testing.assert_array_equal(single.flags, stacked.flags)
        actions = rng.integers(0, 6, 2).astype(np.int32)
        stacked.step(actions)
        single.step(actions)
    assert boundaries >= 2 + 2 * 2  # the first rows, then at least two new episodes per env
