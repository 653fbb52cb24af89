"""``aioseed eval``: run a learner's latest checkpoint locally (V-trace, R2D2 or SAC) under a named
protocol (``aioseed.protocols``), print return statistics and keep them as JSON in the run's logdir,
optionally record episodes as MP4 and export a SavedModel."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import structlog

from aioseed import config_file
from aioseed.errors import MissingFile
from aioseed.protocols import PROTOCOLS, ProtocolName, describe
from aioseed.types import env_actions

if TYPE_CHECKING:
    import gymnasium as gym

    from aioseed.algos.agent import Agent
    from aioseed.envs.video import Clip
    from aioseed.server.config import LearnerConfig

log = structlog.get_logger()

Act = Callable[[np.ndarray, dict[str, np.ndarray], np.ndarray], tuple[np.ndarray, dict[str, np.ndarray]]]
"""(observations [1, ...], recurrent state, the reward that led to them) -> (actions [1], next state)."""


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Evaluate a learner's latest checkpoint."""

    logdir: pathlib.Path = pathlib.Path("logs/cartpole")
    """The learner's logdir (holds config.toml and checkpoints/)."""
    env: str | None = None
    """Gymnasium id to evaluate on (default: the env the learner trained on)."""
    protocol: ProtocolName = "none"
    """none: the env as the policy trained on it. seed: SEED RL's Atari evaluation (no sticky actions, up to
    30 no-op starts, a 108K-frame cap, R2D2 at epsilon 0.001; 30 episodes). machado: Machado et al. 2018's
    (sticky actions 0.25, no no-op starts, full episodes; 100 episodes). seed and machado take ALE/ ids."""
    episodes: int | None = None
    """Episodes to run (default: the protocol's: 10, 30 or 100)."""
    greedy: bool = False
    """V-trace: take the most likely action instead of sampling (Box actions: the squashed mean). R2D2: epsilon 0
    instead of epsilon. SAC: the squashed mean instead of a sample."""
    epsilon: float = 0.001
    """R2D2's exploration when not greedy (SEED's evaluation epsilon; the protocols seed and machado fix it)."""
    seed: int | None = 0
    """Seed of the first episode; episode i uses seed + i."""
    video: pathlib.Path | None = None
    """Record the first video_episodes episodes to this MP4: the env's full-colour frames (Atari: the
    210 x 160 screen, not the 84 x 84 input); gymnasium and ALE ids."""
    video_episodes: int = 1
    """Episodes recorded with --video."""
    fps: int = 30
    """Frames per second of the video."""
    format: Literal["auto", "table", "json"] = "auto"
    """How the result prints: a table, or one JSON object (auto: a table on a terminal, else JSON)."""
    export: pathlib.Path | None = None
    """Also write the policy as a TensorFlow SavedModel here (V-trace; signatures serving_default and greedy)."""
    device: str = "auto"
    """TensorFlow device: auto (the first GPU, else the CPU), cpu, gpu or a name such as /GPU:1."""

    def __post_init__(self) -> None:
        if (self.episodes is not None and self.episodes < 1) or self.video_episodes < 1 or self.fps < 1:
            raise ValueError("episodes, video_episodes and fps must be >= 1")
        if not 0 <= self.epsilon <= 1:
            raise ValueError(f"epsilon must be in [0, 1], got {self.epsilon}")


def evaluate(config: EvalConfig) -> dict[str, Any]:
    from aioseed.algos.agent import zero_state
    from aioseed.app import build_agent
    from aioseed.devices import place
    from aioseed.envs.atari import is_atari
    from aioseed.envs.registry import vector_env_spec
    from aioseed.server.training.checkpoint import Checkpointer

    protocol = PROTOCOLS[config.protocol]
    saved = config_file.saved_learner(config.logdir)
    env_id = config.env or saved.env
    if protocol.atari_only and not is_atari(env_id):
        raise ValueError(f"--protocol {protocol.name} evaluates Atari (ALE/ ids); {env_id} is not one: use --protocol none")
    saved = dataclasses.replace(saved, atari=dataclasses.replace(saved.atari, **protocol.atari_overrides()))
    episodes = config.episodes or protocol.episodes
    epsilon = config.epsilon if protocol.r2d2_epsilon is None else protocol.r2d2_epsilon
    env = _make_env(saved, env_id, render=config.video is not None)
    spec = vector_env_spec(env_id, env, _atari(saved))
    if saved.agent == "r2d2":  # evaluation envs act at r2d2.eval_epsilon
        saved = dataclasses.replace(saved, r2d2=dataclasses.replace(saved.r2d2, eval_epsilon=0.0 if config.greedy else epsilon))
    if saved.agent == "sac":  # evaluation envs run sac.evaluation_action
        saved = dataclasses.replace(saved, sac=dataclasses.replace(saved.sac, evaluation_action="mean" if config.greedy else "sample"))
    agent = build_agent(saved, spec, place(config.device))
    progress = Checkpointer(config.logdir / "checkpoints", agent.checkpoint_objects()).restore()
    if progress is None:
        raise MissingFile(f"no checkpoint under {config.logdir / 'checkpoints'}")
    clip = None
    try:
        if config.video is not None:
            from aioseed.envs.video import Clip

            clip = Clip(config.video, config.fps)
        rows = env.num_envs  # one, or a Football game's controlled players
        act, state = _act(agent, config.greedy, rows), zero_state(agent.state_columns(), rows)
        returns, lengths = _episodes(env, act, state, spec.dtype, dataclasses.replace(config, episodes=episodes), clip)
        right = spec.right_side(rows)
        right_returns = [] if right is None else [r for episode in returns for r, is_right in zip(episode, right) if is_right]
        returns = [r for episode in returns for i, r in enumerate(episode) if right is None or not right[i]]
    finally:
        env.close()
        if clip is not None:
            clip.close()
    from aioseed import __version__

    policy = "greedy" if config.greedy else (f"epsilon {epsilon:g}" if saved.agent == "r2d2" else "sampled")
    result: dict[str, Any] = {
        "env": env_id,
        "agent": saved.agent,
        "policy": policy,
        "protocol": describe(protocol, episodes, policy),
        "atari": dataclasses.asdict(_atari(saved)) if is_atari(env_id) else None,
        "episodes": episodes,
        "mean_return": float(np.mean(returns)),
        "std_return": float(np.std(returns)),
        "min_return": float(np.min(returns)),
        "max_return": float(np.max(returns)),
        "mean_length": float(np.mean(lengths)),
        "train_steps": progress.train_steps,
        "frames": progress.frames,
        "returns": returns,
        "seed": config.seed,
        "players": list(spec.players),
        "aioseed_version": __version__,
        "run_provenance": config_file.saved_provenance(config.logdir),
    }
    if right_returns:  # a return per right-side player and episode, apart from the left side's
        result["right_returns"] = right_returns
        result["right_mean_return"] = float(np.mean(right_returns))
    if saved.agent == "r2d2":
        result["epsilon"] = saved.r2d2.eval_epsilon
    if clip is not None:
        result["video"] = str(config.video)
        log.info("video_written", path=str(config.video), frames=clip.frames)
    if config.export is not None:
        result["export"] = str(_export(agent, config.export))
    try:
        result["written"] = str(_keep(config.logdir, result, config.greedy))
    except OSError as exc:  # a read-only logdir: the result still prints
        log.warning("evaluation_not_kept", logdir=str(config.logdir), error=str(exc))
    return result


def _keep(logdir: pathlib.Path, result: dict[str, Any], greedy: bool) -> pathlib.Path:
    """Writes ``result`` to LOGDIR/evaluations/ENV_PROTOCOL_FRAMES[_greedy].json (``aioseed report`` reads
    them); an evaluation repeated the same way replaces its file."""
    slug = result["env"].replace("/", "-").replace(":", "-")
    path = logdir / "evaluations" / f"{slug}_{result['protocol']['name']}_{result['frames']}{'_greedy' if greedy else ''}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    return path


def _episodes(
    env: gym.vector.VectorEnv, act: Act, initial_state: dict[str, np.ndarray], dtype: np.dtype, config: EvalConfig, clip: Clip | None
) -> tuple[list[list[float]], list[int]]:
    """Returns (one per row of ``env``: a Football game's controlled players end together) and lengths of
    ``config.episodes`` episodes; the first ``video_episodes`` go into ``clip`` (if any): the first frame,
    then one per step."""
    rows = env.num_envs
    from aioseed.envs.rendering import first_frame

    returns, lengths = [], []
    for episode in range(config.episodes):
        recording = clip if episode < config.video_episodes else None
        observations, _ = env.reset(seed=None if config.seed is None else config.seed + episode)
        state, reward = initial_state, np.zeros(rows, np.float32)
        total, steps, finished = np.zeros(rows), 0, False
        if recording is not None:
            recording.add(first_frame(env))
        while not finished:
            actions, state = act(observations.astype(dtype), state, reward)
            observations, reward, terminated, truncated, _ = env.step(actions)
            reward = reward.astype(np.float32)
            total, steps = total + reward, steps + 1
            finished = bool(terminated[0] or truncated[0])
            if recording is not None:
                recording.add(first_frame(env))
        returns.append(total.tolist())
        lengths.append(steps)
    return returns, lengths


def _atari(saved: LearnerConfig) -> Any:
    """The Atari preprocessing the policy saw (with learner-side stacking, the learner's stack)."""
    if saved.learner_frame_stack > 1:
        return dataclasses.replace(saved.atari, stack=saved.learner_frame_stack)
    return saved.atari


def _make_env(saved: LearnerConfig, env_id: str, render: bool) -> gym.vector.VectorEnv:
    """One env as the policy trained on it; with ``render``, one whose frames can be recorded."""
    from aioseed.envs.registry import env_kwargs, make_vector_env
    from aioseed.envs.rendering import rendering_vector_env

    kwargs = env_kwargs(saved.env_kwargs)
    if render:
        return rendering_vector_env(env_id, 1, _atari(saved), kwargs, in_subprocess=True)
    return make_vector_env(env_id, 1, _atari(saved), saved.football, kwargs)


def _act(agent: Agent, greedy: bool, rows: int = 1) -> Act:
    """The policy as one function of ``rows`` rows: the agent's own inference (V-trace samples; R2D2 takes
    epsilon-greedy actions at its evaluation epsilon; SAC takes its ``evaluation_action``), or, greedy, V-trace's
    most likely action (a Box's squashed mean)."""
    evaluation = np.ones(rows, bool)
    if not greedy or agent.uses_replay:
        return lambda obs, state, reward: _first(agent.infer(obs, state, evaluation=evaluation, rewards=reward))
    policy = agent.policy  # V-trace, greedy

    def act(obs: np.ndarray, state: dict[str, np.ndarray], reward: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        extras = [reward] if agent.config.previous_action_reward else []
        out = policy.greedy(obs, *(state[name] for name in policy.state_names), *extras)
        return env_actions(out).numpy(), {name: out[name].numpy() for name in policy.state_names}

    return act


def _first(result: tuple[dict[str, np.ndarray], dict[str, np.ndarray]]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    outputs, state = result
    return env_actions(outputs), state


def _export(agent: Agent, path: pathlib.Path) -> pathlib.Path:
    import tensorflow as tf

    if agent.uses_replay:
        raise ValueError("--export writes V-trace policies; R2D2's and SAC's networks are not exported yet")
    tf.saved_model.save(agent.policy, str(path), signatures={"serving_default": agent.policy.act, "greedy": agent.policy.greedy})
    log.info("policy_exported", path=str(path))
    return path


def table(result: dict[str, Any]) -> str:
    """The result for a terminal."""
    rows = [
        ("env", result["env"]),
        ("policy", f"{result['agent']}, {result['policy']}"),
        ("protocol", f"{result['protocol']['name']}: {result['protocol']['description']}"),
        ("checkpoint", f"{result['train_steps']} train steps, {result['frames']} frames"),
        ("episodes", str(result["episodes"])),
        ("return", f"mean {result['mean_return']:.2f}  std {result['std_return']:.2f}  min {result['min_return']:.2f}  max {result['max_return']:.2f}"),
        ("length", f"mean {result['mean_length']:.1f} steps"),
        *[(key, result[key]) for key in ("video", "export", "written") if key in result],
    ]
    return "\n".join(f"{name:<11}{value}" for name, value in rows) + "\n"


def main(config: EvalConfig) -> int:
    result = evaluate(config)
    as_table = config.format == "table" or (config.format == "auto" and sys.stdout.isatty())
    sys.stdout.write(table(result) if as_table else json.dumps(result) + "\n")
    return 0
