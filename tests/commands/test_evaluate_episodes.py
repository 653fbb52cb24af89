"""``aioseed eval``'s episode loop on its own, against a scripted env: what the policy is given at each step."""

from __future__ import annotations

from typing import Any

import numpy as np

from aioseed.action_space import Discrete
from aioseed.commands.evaluate import EvalConfig, _episodes
from aioseed.envs.life_loss import LIFE_LOST_INFO
from aioseed.spec import EnvSpec

SPEC = EnvSpec(observation_shape=(1,), observation_dtype="float32", action_space=Discrete(2))


class ScriptedLives:
    """One env of three lives: each step rewards 1; a life is lost at steps 2 and 4, the game ends at step 6."""

    num_envs = 1

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        self.steps = 0
        return np.zeros((1, 1), np.float32), {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        self.steps += 1
        lost = np.array([self.steps in (2, 4)])
        done = np.array([self.steps == 6])
        return np.full((1, 1), self.steps, np.float32), np.ones(1, np.float32), done, np.zeros(1, bool), {LIFE_LOST_INFO: lost}


def test_a_new_lifes_first_step_gets_a_fresh_state_and_no_reward_as_in_training() -> None:
    seen: list[tuple[float, float, float]] = []

    def act(observations: np.ndarray, state: dict[str, np.ndarray], reward: np.ndarray, right: Any) -> tuple[np.ndarray, dict]:
        seen.append((float(observations[0, 0]), float(state["core"][0, 0]), float(reward[0])))
        return np.zeros(1, np.int64), {"core": state["core"] + 1}  # the state counts the steps since its start

    returns, lengths = _episodes(ScriptedLives(), act, {"core": np.zeros((1, 3), np.float32)}, SPEC, EvalConfig(episodes=1), None)
    assert returns == [[6.0]] and lengths == [6]  # the game's return runs across its lives
    # (observation, state, reward) at each act: rows 2 and 4 are the lost lives' (their actions are ignored),
    # rows 3 and 5 start anew. Before, the state ran on (3, 4, 5) and the reward was 1 there.
    assert seen == [(0, 0, 0), (1, 1, 1), (2, 2, 1), (3, 0, 0), (4, 1, 1), (5, 0, 0)]
