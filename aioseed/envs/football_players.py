"""gfootball scenarios as vector envs (``make_football_vector_env``); with several controlled players, one
whose rows are the players (``PlayersVectorEnv``).

gfootball's ``number_of_left_players_agent_controls`` (L) and ``..._right_...`` (R)
make one engine take L + R actions per step and give L + R observations and
rewards, left side first. gfootball itself turns the right side's view round:
each right-side player sees the pitch as if its team attacked left to right, its
actions are mirrored back, and its reward is the left side's negated. Here each
player is one row of a ``gymnasium`` vector env, so each is one env slot on the
learner, with its own observation, reward and trajectory; the players of a game
end their episodes together. Autoreset is next-step, as everywhere in aioseed:
the step after a game's final rows resets it and ignores their actions.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np

from aioseed.envs.football import FootballConfig, check_scenario, gfootball_env, make_football_env, time_limit_reached
from aioseed.errors import InvalidInput


class PlayersVectorEnv(gym.vector.VectorEnv):
    """``games`` gfootball engines with ``players`` = (L, R) controlled players each: ``num_envs`` = games x (L + R)
    rows, game g's players at rows g (L + R) ... (g + 1)(L + R) - 1."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, env_id: str, games: int, config: FootballConfig) -> None:
        self.players = (config.left_players, config.right_players)
        self.per_game = config.left_players + config.right_players
        self.games = games
        self.num_envs = games * self.per_game
        scenario = check_scenario(env_id)
        create = gfootball_env().create_environment
        try:
            self._engines = [
                create(
                    env_name=scenario,
                    representation=config.representation,
                    stacked=config.stacked,
                    rewards=config.rewards,
                    number_of_left_players_agent_controls=config.left_players,
                    number_of_right_players_agent_controls=config.right_players,
                    render=False,
                )
                for _ in range(games)
            ]
        except (AssertionError, IndexError) as exc:  # gfootball's engine, asked for more players than a side has
            raise InvalidInput(
                f"{env_id}: cannot control {self.players[0]} left and {self.players[1]} right players: "
                f"the scenario's teams are smaller ({type(exc).__name__}: {exc})"
            ) from None
        space = self._engines[0].observation_space
        self.single_observation_space = gym.spaces.Box(space.low[0], space.high[0], space.shape[1:], space.dtype)
        self.single_action_space = gym.spaces.Discrete(int(self._engines[0].action_space.nvec[0]))
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._ended = np.zeros(games, bool)
        self._observations = np.zeros((games, self.per_game, *self.single_observation_space.shape), space.dtype)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Every game from its kick-off (the engines draw their own randomness: ``seed`` is not used)."""
        for g, engine in enumerate(self._engines):
            self._observations[g] = engine.reset()
        self._ended[:] = False
        return self._rows(self._observations), {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        per_game = np.asarray(actions).reshape(self.games, self.per_game)
        rewards = np.zeros((self.games, self.per_game), np.float32)
        terminated = np.zeros(self.games, bool)
        truncated = np.zeros(self.games, bool)
        for g, engine in enumerate(self._engines):
            if self._ended[g]:
                self._observations[g] = engine.reset()
                self._ended[g] = False
                continue
            observation, reward, done, info = engine.step(per_game[g].tolist())
            self._observations[g] = observation
            rewards[g] = reward
            if done:
                clock = time_limit_reached(engine.unwrapped.observation()[0]["steps_left"], info.get("score_reward", 0))
                truncated[g], terminated[g] = clock, not clock
                self._ended[g] = True
        rows = self.per_game
        return self._rows(self._observations), rewards.reshape(-1), terminated.repeat(rows), truncated.repeat(rows), {}

    def _rows(self, observations: np.ndarray) -> np.ndarray:
        return observations.reshape(self.num_envs, *self.single_observation_space.shape).copy()

    def close_extras(self, **kwargs: Any) -> None:
        for engine in self._engines:
            engine.close()


def make_football_vector_env(env_id: str, num_envs: int, config: FootballConfig = FootballConfig()) -> gym.vector.VectorEnv:
    """``num_envs`` engines stepped in turn, next-step autoreset; with several controlled players, one row per
    player (``PlayersVectorEnv``: ``num_envs`` games x players rows)."""
    if (config.left_players, config.right_players) != (1, 0):
        return PlayersVectorEnv(env_id, num_envs, config)
    return gym.vector.SyncVectorEnv(
        [functools.partial(make_football_env, env_id, config)] * num_envs,
        autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP,
    )
