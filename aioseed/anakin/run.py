"""``aioseed run --architecture anakin``: the learner's env, agent, stop conditions and checkpoints,
with acting, stepping and learning compiled together (``aioseed.anakin.loop``)."""

from __future__ import annotations

import time
from typing import Any

import structlog

from aioseed.algos.impala.agent import ENTROPY_COST, ImpalaAgent
from aioseed.algos.registry import algorithm
from aioseed.anakin.envs import ENVS, TFEnv
from aioseed.anakin.loop import Anakin
from aioseed.compose.config import LearnerConfig
from aioseed.compose.devices import place
from aioseed.server.training.checkpoint import Checkpointer
from aioseed.server.training.trainer import Progress
from aioseed.spec import EnvSpec

log = structlog.get_logger()


def tf_env(env_id: str) -> TFEnv:
    if env_id not in ENVS:
        raise ValueError(f"--architecture anakin needs an env written in TensorFlow: {', '.join(ENVS)}; got {env_id}")
    return ENVS[env_id]()


def build(config: LearnerConfig, envs: int, run: object | None = None) -> tuple[Anakin, Checkpointer | None]:
    """The env's TensorFlow twin, the learner's agent on its one device (``--learner.devices``), and
    checkpoints in the learner's format (``aioseed eval`` reads them)."""
    replicas = place(config.devices)  # before TensorFlow starts: /CPU:k needs logical devices
    import keras

    if replicas.count > 1:
        raise ValueError(f"--architecture anakin runs on one device; --learner.devices names {list(replicas.training)}")
    trains = algorithm(config.agent)
    if not trains.actor_policy:
        raise ValueError(f"--architecture anakin trains an agent whose policy runs beside its env in the graph (impala), not {config.agent}")
    if config.tracking != "none":
        raise ValueError(f"--tracking {config.tracking} sends a learner's run; --architecture anakin writes TensorBoard only")
    if config.seed is not None:
        keras.utils.set_random_seed(config.seed)  # as aioseed.compose.learner.build
    env = tf_env(config.env)
    spec = EnvSpec(observation_shape=env.observation_shape, observation_dtype=env.observation_dtype, action_space=env.num_actions)
    agent = trains.make_agent(trains.settings(config), spec, replicas, seed=config.seed)
    anakin = Anakin(
        env=env, agent=agent, envs=envs, unroll_length=config.training.unroll_length, batch_size=config.training.batch_size,
        seed=config.seed, window=config.return_window,
    )
    checkpointer = None
    if config.logdir is not None:
        from aioseed.compose import config_file

        config_file.save(config.logdir, run or config, "learner" if run is None else "run")
        from aioseed.compose.learner import warm_start

        checkpointer = Checkpointer(config.logdir / "checkpoints", anakin.checkpoint_objects(), warm_start=warm_start(config))
    return anakin, checkpointer


def curve_point(metrics: dict[str, Any], mean_return: float, episodes: int, updates: int, agent: ImpalaAgent) -> dict[str, float]:
    """An iteration's TensorBoard scalars, under the learner's names (``aioseed report`` and
    ``bench learning-curve`` read charts/return), with the schedules' values in effect."""
    point = {name: float(value) for name, value in metrics.items() if name.startswith(("losses/", "policy/"))}
    return point | {
        "charts/return": mean_return,
        "charts/episodes": float(episodes),
        "learner/train_steps": float(updates),
        "learner/learning_rate": agent.current_learning_rate,
        ENTROPY_COST: float(agent.entropy_cost.numpy()),
    }


def train(config: LearnerConfig, envs: int, run: object | None = None) -> dict[str, Any]:
    """Iterates until a stop condition; returns frames, seconds, mean return, why it stopped, and the
    (seconds, frames) of every progress line."""
    anakin, checkpointer = build(config, envs, run)
    progress = checkpointer.restore() if checkpointer is not None else None
    summaries = None
    if config.logdir is not None and config.tensorboard:
        from aioseed.server.reporting.summaries import SummaryWriter

        summaries = SummaryWriter(config.logdir)
    frames, updates = (progress.frames, progress.train_steps) if progress else (0, 0)
    stop = config.stop
    started = last_log = time.perf_counter()
    logged_frames, reason = frames, None
    history: list[tuple[float, int]] = []
    first_frames: float | None = None
    while reason is None:
        anakin.agent.set_progress(frames)  # the learning-rate and entropy schedules, as the learner's trainer moves them
        metrics = anakin.iterate()
        frames += anakin.frames_per_iteration
        updates += anakin.updates_per_iteration
        now = time.perf_counter()
        first_frames = now if first_frames is None else first_frames  # after the first iteration (and its compile)
        mean_return = anakin.mean_return()
        if stop.at_return is not None and anakin.episodes >= config.return_window and mean_return >= stop.at_return:
            reason = "return"
        elif stop.after_frames is not None and frames >= stop.after_frames:
            reason = "frames"
        elif stop.after_seconds is not None and now - started >= stop.after_seconds:
            reason = "time"
        elif stop.after_training_seconds is not None and now - first_frames >= stop.after_training_seconds:
            reason = "time"
        report = reason is not None or now - last_log >= config.log_every_s
        if summaries is not None:  # every iteration: a seed's curve is the same points on every run
            summaries(curve_point(metrics, mean_return, anakin.episodes, updates, anakin.agent), frames, flush=report)
        if report:
            fps = (frames - logged_frames) / max(now - last_log, 1e-9)
            log.info(
                "progress", frames=frames, fps=round(fps), episodes=anakin.episodes, mean_return=round(mean_return, 1),
                loss=round(float(metrics["losses/total"]), 4), train_steps=updates,
            )
            last_log, logged_frames = now, frames
            history.append((now - started, frames))
    seconds = time.perf_counter() - started
    log.info("stop_condition", reason=reason, frames=frames, mean_return=round(anakin.mean_return(), 1), seconds=round(seconds, 2))
    if checkpointer is not None:
        checkpointer.save(Progress(train_steps=updates, frames=frames))
    return {"frames": frames, "seconds": seconds, "mean_return": anakin.mean_return(), "reason": reason, "history": history}
