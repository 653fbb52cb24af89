"""A trained policy outside the learner: ``aioseed.load_policy(path)``, which ``aioseed eval`` also runs.

``path`` is a run's logdir, its ``checkpoints/`` or one checkpoint (``logs/x/checkpoints/ckpt-160``). The
network is rebuilt from the run's config.toml and its weights restored; ``act`` takes a batch of
observations as the policy saw them in training (``make_env`` makes that env) and gives actions::

    policy = aioseed.load_policy("logs/cartpole")
    env = policy.make_env()
    observations, _ = env.reset(seed=0)
    state = policy.initial_state(env.num_envs)
    for _ in range(500):
        actions, state = policy.act(observations, state)
        observations, rewards, terminated, truncated, _ = env.step(actions)
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from aioseed.algos.registry import algorithm
from aioseed.by_side import Infer, infer_by_side
from aioseed.compose import config_file
from aioseed.errors import MissingFile
from aioseed.spec import EnvSpec
from aioseed.types import env_actions

if TYPE_CHECKING:
    import gymnasium as gym

    from aioseed.algos.agent import Agent
    from aioseed.compose.config import LearnerConfig
    from aioseed.envs.atari import AtariConfig

Act = Callable[[np.ndarray, dict[str, np.ndarray], np.ndarray, "np.ndarray | None"], tuple[np.ndarray, dict[str, np.ndarray]]]
"""(observations [B, ...], recurrent state, the rewards that led to them, <bool>[B] right-side players' rows or
None) -> (actions [B], next state). The rows' sides matter only to a policy per side (``self_play.opponent
separate``)."""


def atari_seen(saved: LearnerConfig) -> AtariConfig:
    """The Atari preprocessing the policy saw (with learner-side stacking, the learner's stack)."""
    if saved.learner_frame_stack > 1:
        return dataclasses.replace(saved.atari, stack=saved.learner_frame_stack)
    return saved.atari


def trained_env(saved: LearnerConfig, env_id: str, num_envs: int = 1, render: bool = False) -> gym.vector.VectorEnv:
    """``num_envs`` envs as the policy trained on them; with ``render``, ones whose frames can be recorded."""
    from aioseed.envs.registry import env_kwargs, make_vector_env
    from aioseed.envs.rendering import rendering_vector_env

    kwargs = env_kwargs(saved.env_kwargs)
    if render:
        return rendering_vector_env(env_id, num_envs, atari_seen(saved), kwargs, in_subprocess=True)
    return make_vector_env(env_id, num_envs, atari_seen(saved), saved.football, kwargs)


def acting_settings(saved: LearnerConfig, greedy: bool, epsilon: float) -> LearnerConfig:
    """``saved`` set to act as evaluation envs do: R2D2 at ``epsilon`` (0 when greedy), SAC's mean action and TD3's noiseless one when greedy."""
    trains = algorithm(saved.agent)
    return trains.with_settings(saved, trains.evaluation(trains.settings(saved), greedy, epsilon))


def acting_function(agent: Agent, greedy: bool) -> Act:
    """The policy as one function: the agent's own inference for evaluation rows (V-trace samples; R2D2 takes
    epsilon-greedy actions at its evaluation epsilon; SAC and TD3 their ``evaluation_action``), or, greedy, V-trace's most
    likely action (a Box's squashed mean). A policy per side acts on each row with its side's."""
    if getattr(agent, "right", None) is not None:  # a policy per side (``SidedAgent``)
        return _sided(acting_function(agent.left, greedy), acting_function(agent.right, greedy))
    if not greedy or agent.uses_replay:

        def infer(
            obs: np.ndarray, state: dict[str, np.ndarray], reward: np.ndarray, right: np.ndarray | None = None
        ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
            outputs, next_state = agent.infer(obs, state, evaluation=np.ones(len(obs), bool), rewards=reward)
            return env_actions(outputs), next_state

        return infer
    policy = agent.policy  # V-trace, greedy

    def act(
        obs: np.ndarray, state: dict[str, np.ndarray], reward: np.ndarray, right: np.ndarray | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        extras = [reward] if agent.config.previous_action_reward else []
        out = policy.greedy(obs, *(state[name] for name in policy.state_names), *extras)
        return env_actions(out).numpy(), {name: out[name].numpy() for name in policy.state_names}

    return act


def _sided(left: Act, right: Act) -> Act:
    """``left`` on left-side rows and ``right`` on right-side ones, in row order."""

    def as_infer(side: Act) -> Infer:
        def infer(
            obs: np.ndarray, state: dict[str, np.ndarray], slots: None, evaluation: None, reward: np.ndarray
        ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
            taken, next_state = side(obs, state, reward, None)
            return {"action": np.asarray(taken)}, next_state

        return infer

    left_infer, right_infer = as_infer(left), as_infer(right)

    def act(
        obs: np.ndarray, state: dict[str, np.ndarray], reward: np.ndarray, rights: np.ndarray | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        if rights is None:
            return left(obs, state, reward, None)
        outputs, next_state = infer_by_side(np.asarray(rights, bool), left_infer, right_infer, obs, state, None, None, reward)
        return outputs["action"], next_state

    return act


def locate(path: pathlib.Path) -> tuple[pathlib.Path, str | None]:
    """(the run's logdir, the checkpoint ``path`` names or None for the latest) of a logdir, its checkpoints/ or
    one checkpoint."""
    if (path / "config.toml").is_file():
        return path, None
    if path.name == "checkpoints" and (path.parent / "config.toml").is_file():
        return path.parent, None
    if pathlib.Path(f"{path}.index").is_file() and (path.parent.parent / "config.toml").is_file():
        return path.parent.parent, str(path)
    raise MissingFile(f"{path} is no run's logdir, checkpoints/ or checkpoint (logs/x, logs/x/checkpoints, logs/x/checkpoints/ckpt-N)")


def restored_agent(
    saved: LearnerConfig, spec: EnvSpec, logdir: pathlib.Path, checkpoint: str | None = None, device: str = "auto"
) -> tuple[Agent, Any]:
    """(the agent ``saved`` describes with ``checkpoint``'s weights (None: the latest), its Progress)."""
    from aioseed.compose.devices import place
    from aioseed.compose.learner import build_agent
    from aioseed.server.training.checkpoint import Checkpointer

    agent = build_agent(saved, spec, place(device))
    progress = Checkpointer(logdir / "checkpoints", agent.checkpoint_objects()).restore(checkpoint)
    if progress is None:
        raise MissingFile(f"no checkpoint under {logdir / 'checkpoints'}: has the run saved one yet?")
    return agent, progress


@dataclasses.dataclass
class TrainedPolicy:
    """A checkpoint's policy. ``act`` a batch of observations (with the recurrent state, where the network has
    one); ``make_env`` the env it was trained on, with the same preprocessing."""

    env_id: str
    spec: EnvSpec
    """What the policy takes and gives: observations of ``spec.observation_shape`` and its action space."""
    settings: LearnerConfig
    """The run's learner settings (from its config.toml)."""
    frames: int
    train_steps: int
    agent: Agent
    greedy: bool

    def __post_init__(self) -> None:
        self._act = acting_function(self.agent, self.greedy)

    def initial_state(self, batch: int) -> dict[str, np.ndarray]:
        """The recurrent state of ``batch`` fresh episodes (empty for a feedforward network)."""
        from aioseed.algos.agent import zero_state

        return zero_state(self.agent.state_columns(), batch)

    def act(
        self, observations: np.ndarray, state: dict[str, np.ndarray] | None = None, rewards: np.ndarray | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(actions [B], the next state) for ``observations`` [B, *spec.observation_shape]; ``state`` defaults to
        ``initial_state``, ``rewards`` (the ones that led to the observations, for networks that take them) to 0.
        Start a new episode's row from the initial state."""
        observations = np.asarray(observations, self.spec.dtype)
        batch = len(observations)
        if observations.shape[1:] != self.spec.observation_shape:
            raise ValueError(f"observations must be [B, {', '.join(map(str, self.spec.observation_shape))}], got {observations.shape}")
        state = self.initial_state(batch) if state is None else state
        rewards = np.zeros(batch, np.float32) if rewards is None else np.asarray(rewards, np.float32)
        return self._act(observations, state, rewards, self.spec.right_side(batch))

    def make_env(self, num_envs: int = 1) -> gym.vector.VectorEnv:
        """``num_envs`` envs as the policy trained on them (a vector env: its observations fit ``act``)."""
        return trained_env(self.settings, self.env_id, num_envs)


def load_policy(path: str | os.PathLike[str], greedy: bool = False, epsilon: float = 0.001, device: str = "auto") -> TrainedPolicy:
    """The policy of a run's logdir, its ``checkpoints/`` or one checkpoint.

    ``greedy``: V-trace's most likely action (a Box's squashed mean), R2D2 at epsilon 0, SAC's mean action, TD3's without noise;
    otherwise sampled, R2D2 at ``epsilon``. ``device``: auto (the first GPU, else the CPU), cpu, gpu or a name.
    """
    from aioseed.envs.registry import vector_env_spec

    logdir, checkpoint = locate(pathlib.Path(path))
    saved = config_file.saved_learner(logdir)
    env = trained_env(saved, saved.env)
    try:
        spec = vector_env_spec(saved.env, env, atari_seen(saved))
    finally:
        env.close()
    agent, progress = restored_agent(acting_settings(saved, greedy, epsilon), spec, logdir, checkpoint, device)
    return TrainedPolicy(
        env_id=saved.env, spec=spec, settings=saved, frames=progress.frames, train_steps=progress.train_steps, agent=agent,
        greedy=greedy,
    )
