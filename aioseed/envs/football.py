"""Google Research Football (gfootball) as gymnasium envs: ids ``football:<scenario>``.

gfootball speaks the old gym API (``reset`` -> obs, ``step`` -> 4-tuple); shimmy's
``GymV21CompatibilityV0`` adapts it. An episode that ends because the scenario's
clock ran out (``game_duration``) is a time limit: it reaches the learner as
*truncated*, so V-trace bootstraps from its final observation. Goals, the ball
going out of play and lost possession end episodes as *terminated*. The engine
runs without rendering; install it with ``make football`` (see docs/environments.md).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import pathlib
import pkgutil
from types import ModuleType
from typing import Any, Literal

import gymnasium as gym

from aioseed.action_space import Discrete
from aioseed.errors import InvalidInput, close_matches
from aioseed.spec import EnvSpec

PREFIX = "football:"


@dataclasses.dataclass(frozen=True)
class FootballConfig:
    """How gfootball scenarios are observed and rewarded."""

    representation: Literal["extracted", "simple115v2"] = "extracted"
    """extracted: the Super Mini Map (SMM), uint8[72, 96, 4] (players of both teams, ball, active
    player); simple115v2: float32[115] of positions, directions and game mode."""
    stacked: bool = False
    """Stack the last 4 observations on the last axis (SMM: uint8[72, 96, 16]), as SEED does."""
    rewards: Literal["scoring", "scoring,checkpoints"] = "scoring"
    """scoring: +1/-1 per goal; checkpoints adds +0.1 for each of 10 zones crossed towards the goal."""
    left_players: int = 1
    """Left-side players the policy controls (gfootball's number_of_left_players_agent_controls). Each is one
    row (env slot) on the learner with its own observation, reward and trajectory; an actor's envs count games."""
    right_players: int = 0
    """Right-side players the policy controls too (0: the scenario's built-in AI plays the right side). They see
    the pitch turned round, as if attacking left to right, and their reward is the left side's negated."""

    def __post_init__(self) -> None:
        if self.left_players < 1 or self.right_players < 0:
            raise ValueError(
                f"football needs left_players >= 1 and right_players >= 0, got {self.left_players} and {self.right_players}"
            )


def is_football(env_id: str) -> bool:
    return env_id.startswith(PREFIX)


def scenario_name(env_id: str) -> str:
    """``football:academy_empty_goal_close`` -> ``academy_empty_goal_close``."""
    if not is_football(env_id) or len(env_id) == len(PREFIX):
        raise InvalidInput(f"not a football id: {env_id!r} (expected e.g. football:academy_empty_goal_close)")
    return env_id[len(PREFIX) :]


def time_limit_reached(steps_left: int, score_reward: float) -> bool:
    """The clock ended the episode: no steps left, and it was not a goal that ended it."""
    return steps_left <= 0 and score_reward == 0


def check_scenario(env_id: str) -> str:
    """The scenario of ``env_id``, which gfootball must ship (it would ``sys.exit(1)`` on an unknown one)."""
    scenario = scenario_name(env_id)
    known = scenarios()
    if scenario not in known:
        raise InvalidInput(f"unknown football scenario {scenario!r}{close_matches(scenario, known)} The scenarios: {', '.join(known)}")
    return scenario


def gfootball_env() -> ModuleType:
    """``gfootball.env``, or a UserError that says how to get the engine."""
    try:
        import gfootball.env
    except ImportError:
        raise InvalidInput(
            "football: ids on the default backend need gfootball's engine: `make football` builds it "
            "(or --env-backend envpool: EnvPool's port, Super Mini Map and one player only)"
        ) from None
    return gfootball.env


def make_football_env(env_id: str, config: FootballConfig = FootballConfig()) -> gym.Env:
    """One scenario with one controlled player as a gymnasium env, rendering off."""
    create = gfootball_env().create_environment  # first: without gfootball, shimmy is missing too
    from shimmy import GymV21CompatibilityV0

    scenario = check_scenario(env_id)
    env = create(
        env_name=scenario,
        representation=config.representation,
        stacked=config.stacked,
        rewards=config.rewards,
        render=False,
    )
    return GymV21CompatibilityV0(env=_MarkTimeLimit(env))


def scenarios() -> list[str]:
    """The scenario names gfootball ships (read from its files: importing it imports the old gym, which prints
    warnings); without gfootball, the ones EnvPool's port of the engine has."""
    spec = importlib.util.find_spec("gfootball")
    if spec is None or not spec.submodule_search_locations:
        try:
            import envpool
        except ImportError:
            raise InvalidInput("football: ids need gfootball (make football) or EnvPool (pip install 'aioseed[football]')") from None
        tasks = (name for name in envpool.list_all_envs() if name.startswith("gfootball/"))
        return sorted(name.removeprefix("gfootball/").removesuffix("-v1") for name in tasks)
    path = [str(pathlib.Path(spec.submodule_search_locations[0]) / "scenarios")]
    return sorted(m.name for m in pkgutil.iter_modules(path) if not m.ispkg and not m.name.startswith("_"))


ACTIONS = 19
"""gfootball's default action set (action_set_v1), which every representation acts with."""


def football_spec(config: FootballConfig) -> EnvSpec:
    """The spec ``football:`` envs declare under ``config``, known without an engine (a learner needs none)."""
    frames = 4 if config.stacked else 1
    if config.representation == "simple115v2":
        shape, dtype = (115 * frames,), "float32"
    else:
        shape, dtype = (72, 96, 4 * frames), "uint8"
    return EnvSpec(shape, dtype, Discrete(ACTIONS), players=(config.left_players, config.right_players))


class _MarkTimeLimit:
    """Old-gym wrapper: sets ``info["TimeLimit.truncated"]`` where the clock ended the episode.

    shimmy then reports such a step as truncated instead of terminated. The
    clock is read from the engine's raw observation (``steps_left``), which
    every representation keeps underneath. Everything else passes through.
    """

    def __init__(self, env: Any) -> None:
        self.env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def step(self, action: Any) -> tuple[Any, float, bool, dict]:
        observation, reward, done, info = self.env.step(action)
        if done:
            raw = self.env.unwrapped.observation()[0]
            info["TimeLimit.truncated"] = time_limit_reached(raw["steps_left"], info.get("score_reward", 0))
        return observation, reward, done, info
