"""``aioseed eval``: run a learner's latest checkpoint locally (V-trace, R2D2 or SAC) under a named
protocol (``aioseed.results.protocols``), print return statistics and keep them as JSON in the run's logdir,
optionally record episodes as MP4 and export a SavedModel or ONNX."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import structlog

from aioseed.algos.registry import algorithm
from aioseed.compose import config_file, export
from aioseed.compose.policy import Act, acting_function, acting_settings, atari_seen, restored_agent, trained_env
from aioseed.errors import InvalidInput
from aioseed.results.protocols import PROTOCOLS, ProtocolName, describe

if TYPE_CHECKING:
    import gymnasium as gym

    from aioseed.envs.video import Clip
    from aioseed.spec import EnvSpec

log = structlog.get_logger()

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
    onnx: pathlib.Path | None = None
    """Also write the greedy policy as ONNX here (V-trace; tf2onnx: pip install 'aioseed[onnx]'): input observations
    (and the recurrent state), outputs action, logits (to sample from) and value."""
    device: str = "auto"
    """TensorFlow device: auto (the first GPU, else the CPU), cpu, gpu or a name such as /GPU:1."""

    def __post_init__(self) -> None:
        if (self.episodes is not None and self.episodes < 1) or self.video_episodes < 1 or self.fps < 1:
            raise ValueError("episodes, video_episodes and fps must be >= 1")
        if not 0 <= self.epsilon <= 1:
            raise ValueError(f"epsilon must be in [0, 1], got {self.epsilon}")


def evaluate(config: EvalConfig) -> dict[str, Any]:
    from aioseed.algos.agent import zero_state
    from aioseed.envs.atari import is_atari
    from aioseed.envs.football import is_football
    from aioseed.envs.registry import vector_env_spec
    from aioseed.results.scoring import GOAL_RETURNS, games_scored

    protocol = PROTOCOLS[config.protocol]
    saved = config_file.saved_learner(config.logdir)
    env_id = config.env or saved.env
    if protocol.atari_only and not is_atari(env_id):
        raise InvalidInput(f"--protocol {protocol.name} evaluates Atari (ALE/ ids); {env_id} is not one: use --protocol none")
    saved = dataclasses.replace(saved, atari=dataclasses.replace(saved.atari, **protocol.atari_overrides()))
    episodes = config.episodes or protocol.episodes
    epsilon = config.epsilon if protocol.r2d2_epsilon is None else protocol.r2d2_epsilon
    env = trained_env(saved, env_id, render=config.video is not None)
    spec = vector_env_spec(env_id, env, atari_seen(saved))
    saved = acting_settings(saved, config.greedy, epsilon)
    agent, progress = restored_agent(saved, spec, config.logdir, device=config.device)
    clip = None
    try:
        if config.export is not None or config.onnx is not None:  # refused now, not after the episodes
            export.check(agent, onnx=config.onnx is not None)
        if config.video is not None:
            from aioseed.envs.video import Clip

            clip = Clip(config.video, config.fps)
        rows = env.num_envs  # one, or a Football game's controlled players
        act, state = acting_function(agent, config.greedy), zero_state(agent.state_columns(), rows)
        returns, lengths = _episodes(env, act, state, spec, dataclasses.replace(config, episodes=episodes), clip)
        right = spec.right_side(rows)
        right_returns = [] if right is None else [r for episode in returns for r, is_right in zip(episode, right) if is_right]
        left = [[r for i, r in enumerate(episode) if right is None or not right[i]] for episode in returns]
        returns = [r for episode in left for r in episode]
    finally:
        env.close()
        if clip is not None:
            clip.close()
    from aioseed import __version__

    trains = algorithm(saved.agent)
    acting = trains.settings(saved)
    policy = trains.policy_name(acting, config.greedy)
    result: dict[str, Any] = {
        "env": env_id,
        "agent": saved.agent,
        "policy": policy,
        "protocol": describe(protocol, episodes, policy),
        "atari": dataclasses.asdict(atari_seen(saved)) if is_atari(env_id) else None,
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
    if is_football(env_id) and saved.football.rewards in GOAL_RETURNS:  # the figure academy results are read by
        result["scoring_rate"] = games_scored(left, GOAL_RETURNS[saved.football.rewards])
    result.update(trains.evaluation_fields(acting))
    if clip is not None:
        result["video"] = str(config.video)
        log.info("video_written", path=str(config.video), frames=clip.frames)
    _keep(config, result)  # before the exports: a failed conversion loses no episodes
    if config.export is not None or config.onnx is not None:
        if config.export is not None:
            result["export"] = str(export.saved_model(agent, config.export))
        if config.onnx is not None:
            result["onnx"] = str(export.onnx(agent, config.onnx, config.export))
        _keep(config, result)
    return result


def _keep(config: EvalConfig, result: dict[str, Any]) -> None:
    """Writes ``result`` to LOGDIR/evaluations/ENV_PROTOCOL_FRAMES_EPISODESep[_greedy].json (``aioseed report``
    reads them) and notes the path in it as ``written``; an evaluation repeated the same way replaces its file,
    whole (a report never reads half a file), and a shorter one never replaces a longer one. A read-only logdir
    is logged: the result still prints."""
    slug = result["env"].replace("/", "-").replace(":", "-")
    greedy = "_greedy" if config.greedy else ""
    name = f"{slug}_{result['protocol']['name']}_{result['frames']}_{result['episodes']}ep{greedy}.json"
    path = config.logdir / "evaluations" / name
    try:
        path.parent.mkdir(exist_ok=True)
        partial = path.with_suffix(".partial")
        kept = {name: value for name, value in result.items() if name != "written"}
        partial.write_text(json.dumps(kept, indent=1) + "\n")
        partial.replace(path)
    except OSError as exc:
        log.warning("evaluation_not_kept", logdir=str(config.logdir), error=str(exc))
        return
    result["written"] = str(path)


def _episodes(
    env: gym.vector.VectorEnv,
    act: Act,
    initial_state: dict[str, np.ndarray],
    spec: EnvSpec,
    config: EvalConfig,
    clip: Clip | None,
) -> tuple[list[list[float]], list[int]]:
    """Returns (one per row of ``env``: a Football game's controlled players end together) and lengths of
    ``config.episodes`` episodes; the first ``video_episodes`` go into ``clip`` (if any): the first frame,
    then one per step."""
    rows = env.num_envs
    right, dtype = spec.right_side(rows), spec.dtype
    from aioseed.envs.life_loss import LIFE_LOST_INFO
    from aioseed.envs.rendering import first_frame

    returns, lengths = [], []
    for episode in range(config.episodes):
        recording = clip if episode < config.video_episodes else None
        observations, _ = env.reset(seed=None if config.seed is None else config.seed + episode)
        state, reward = initial_state, np.zeros(rows, np.float32)
        total, steps, finished = np.zeros(rows), 0, False
        lost, starts = np.zeros(rows, bool), np.zeros(rows, bool)
        if recording is not None:
            recording.add(first_frame(env))
        while not finished:
            if starts.any():  # a new life's first row starts a training episode: the learner's EnvTable resets here
                state = {name: np.where(_rows(starts, value), initial_state[name], value) for name, value in state.items()}
                reward = np.where(starts, 0.0, reward).astype(np.float32)
            actions, state = act(observations.astype(dtype), state, reward, right)
            observations, reward, terminated, truncated, infos = env.step(actions)
            reward = reward.astype(np.float32)
            total, steps = total + reward, steps + 1
            finished = bool(terminated[0] or truncated[0])
            # --atari.episodic-life: the row after a lost life's (whose action the env ignores) starts anew.
            starts, lost = lost, np.asarray(infos.get(LIFE_LOST_INFO, np.zeros(rows, bool)), bool)
            if recording is not None:
                recording.add(first_frame(env))
        returns.append(total.tolist())
        lengths.append(steps)
    return returns, lengths


def _rows(mask: np.ndarray, like: np.ndarray) -> np.ndarray:
    """<bool>[B] ``mask`` shaped to broadcast over ``like``'s rows ([B, ...])."""
    return mask.reshape(-1, *[1] * (like.ndim - 1))


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
        *([("scoring", f"{result['scoring_rate']:.0%} of games (the left side scored)")] if "scoring_rate" in result else []),
        *[(key, result[key]) for key in ("video", "export", "onnx", "written") if key in result],
    ]
    return "\n".join(f"{name:<11}{value}" for name, value in rows) + "\n"


def main(config: EvalConfig) -> int:
    result = evaluate(config)
    as_table = config.format == "table" or (config.format == "auto" and sys.stdout.isatty())
    sys.stdout.write(table(result) if as_table else json.dumps(result) + "\n")
    return 0
