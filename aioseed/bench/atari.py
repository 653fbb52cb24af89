"""``aioseed bench atari``: end-to-end training frames/s against the compute bound of this machine.

First ``aioseed run`` trains Pong in a spawned process for ``warmup_s +
seconds``; frames/s is taken over the last ``seconds``. Then, in this process
and on the same cores, each component runs alone: the env stepping (same env
count), inference at the mean batch size the run reached, and the train step at
the run's ``[T + 1, B]`` shape. Each is costed in CPU core-seconds per env step
(process CPU time, so TensorFlow's threads count), and the bound is
``cores / (env + inference + training core-seconds per step)``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable

import numpy as np

from aioseed.algos.agent import Agent, zero_state
from aioseed.bench.children import ChildFailed
from aioseed.bench.config import AtariBench
from aioseed.bench.spawned import run_in_process, timed_history
from aioseed.commands.run import RunConfig
from aioseed.server.acting.step import unroll_columns
from aioseed.server.config import ConsoleConfig, StopConfig
from aioseed.spec import EnvSpec
from aioseed.types import TrainBatch


def core_seconds(work: Callable[[], int], seconds: float) -> tuple[float, float]:
    """Runs ``work`` (returns env steps done) repeatedly for ``seconds``: (core-seconds per step, steps/s wall)."""
    work()  # warm-up: tracing, caches
    steps, cpu, wall = 0, time.process_time(), time.perf_counter()
    while time.perf_counter() - wall < seconds:
        steps += work()
    return (time.process_time() - cpu) / steps, steps / (time.perf_counter() - wall)


def measure(run: RunConfig, warmup_s: float, seconds: float) -> dict[str, float]:
    """Trains ``run`` in a spawned process for ``warmup_s + seconds``; frames/s and the rest over the last
    ``seconds``. Nothing is written (no logdir: a measured run neither resumes nor leaves a run behind) and
    no console is served."""
    stop = StopConfig(after_training_seconds=warmup_s + seconds)  # the warm-up counts from the first frames
    learner = dataclasses.replace(run.learner, stop=stop, logdir=None, console=ConsoleConfig(enabled=False))
    points = timed_history(run_in_process(dataclasses.replace(run, learner=learner), warmup_s + seconds))
    start_at = points[-1]["time"] - seconds
    window = [p for p in points if p["time"] >= start_at]
    first, last = window[0], window[-1]
    if last["charts/frames"] <= first["charts/frames"]:
        raise ChildFailed(
            f"the run trained no frames in its {seconds:g} s hold after a {warmup_s:g} s warm-up from its first frames"
        )
    frames_per_s = (last["charts/frames"] - first["charts/frames"]) / (last["time"] - first["time"])
    batches = [p["batcher/batch_size"] for p in window if p["batcher/batches"] > 0]
    result = {
        "frames_per_s": frames_per_s,
        "train_steps_per_s": (last["learner/train_steps"] - first["learner/train_steps"]) / (last["time"] - first["time"]),
        "mean_batch": float(np.mean(batches)) if batches else math.nan,  # IMPALA mode: no inference batches
        "policy_lag": float(np.nanmean([p["learner/policy_lag"] for p in window])),
    }
    if "impala/received_bytes" in last:  # IMPALA mode: unroll uploads and parameter downloads, measured
        from aioseed.compose.learner import learner_specs

        frames_per_step = learner_specs(run.learner)[0].frames_per_step
        env_steps = (last["charts/frames"] - first["charts/frames"]) / frames_per_step
        moved = sum(last[k] - first[k] for k in ("impala/received_bytes", "impala/params_sent_bytes"))
        result["wire_bytes_per_step"] = moved / max(env_steps, 1.0)
    return result


def synthetic_batch(agent: Agent, spec: EnvSpec, unroll_length: int, batch_size: int, rng: np.random.Generator) -> TrainBatch:
    """A train batch of random values in the shape the learner hands ``agent``: each unroll column
    ``[burn_in + T + 1, B, ...]``, the recurrent state ``[B, ...]`` and, for a replay's batch, its weights."""
    shape = (agent.burn_in + unroll_length + 1, batch_size)
    state = agent.state_columns()
    batch: TrainBatch = {}
    for name, (column, dtype) in unroll_columns(agent, spec).items():
        dims, kind = (shape[1:] if name in state else shape) + tuple(column), np.dtype(dtype)
        if kind == np.uint8:
            batch[name] = rng.integers(0, 255, dims, dtype=np.uint8)
        elif kind.kind in "iu":
            batch[name] = rng.integers(0, max(agent.spec.num_actions, 1), dims).astype(kind)
        elif kind == bool:
            batch[name] = np.zeros(dims, bool)
        else:
            batch[name] = rng.normal(size=dims).astype(kind)
    if agent.uses_replay:
        batch["weights"] = np.ones(batch_size, np.float32)
    return batch


def components(run: RunConfig, mean_batch: float, seconds: float) -> dict[str, float]:
    """Each part of ``run`` alone in this process, in core-ms per agent step: its envs stepped together
    (random actions), inference at ``mean_batch`` rows (NaN, where none was seen, as in IMPALA mode: an actor's
    envs) and the train step at its ``[burn_in + T + 1, B]`` shape, in the run's precision; each timed for
    ``seconds``. A replay's train step counts ``replay_ratio`` times per stored step (each is sampled that often)."""
    from aioseed.algos.replicas import Replicas
    from aioseed.compose.learner import build_agent, learner_specs
    from aioseed.compose.sources import replay_settings
    from aioseed.envs.registry import make_vector_env

    config = run.learner
    num_envs = run.num_actors * run.envs_per_actor
    # The envs as the actors run them (with learner-side stacking: single frames), the policy as the learner does.
    envs = make_vector_env(config.env, num_envs, run.actor_config(0, 0).atari)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    wire, spec = learner_specs(config)

    def step_envs() -> int:
        envs.step(rng.integers(0, spec.num_actions, num_envs))
        return num_envs

    env_cost, env_rate = core_seconds(step_envs, seconds)
    envs.close()

    agent = build_agent(config, spec, Replicas())
    batch = max(1, round(mean_batch)) if math.isfinite(mean_batch) else run.envs_per_actor  # NaN: IMPALA mode's actors infer their own envs
    observations = rng.integers(0, 255, (batch, *spec.observation_shape), dtype=np.uint8)
    state = zero_state(agent.state_columns(), batch)
    infer_cost, _ = core_seconds(lambda: (agent.infer(observations, state), batch)[1], seconds)

    t, b = config.training.unroll_length, config.training.batch_size
    train_batch = synthetic_batch(agent, wire, t, b, rng)
    sampled = replay_settings(config).ratio if agent.uses_replay else 1.0
    train_cost, _ = core_seconds(lambda: (agent.train_step(train_batch), t * b)[1], seconds)
    return {
        "frames_per_step": spec.frames_per_step,
        "env_core_ms_per_step": env_cost * 1e3,
        "env_steps_per_s_alone": env_rate,
        "inference_core_ms_per_step": infer_cost * 1e3,
        "inference_batch": batch,
        "train_core_ms_per_step": train_cost * 1e3 * sampled,
    }


def compute_bound(parts: dict[str, float], cores: int) -> float:
    """Frames/s the ``components`` allow on ``cores``: cores / (env + inference + training core-s per step)."""
    per_step_s = (parts["env_core_ms_per_step"] + parts["inference_core_ms_per_step"] + parts["train_core_ms_per_step"]) / 1e3
    return cores / per_step_s * parts["frames_per_step"]


def main(bench: AtariBench) -> int:
    run = measure(bench.run, bench.warmup_s, bench.seconds)
    parts = components(bench.run, run["mean_batch"], bench.component_s)
    cores = os.cpu_count() or 1
    bound = compute_bound(parts, cores)
    result = {
        "preset": bench.run.preset,
        "env": bench.run.learner.env,
        "agent": bench.run.learner.agent,
        "precision": bench.run.learner.precision,
        "envs": bench.run.num_actors * bench.run.envs_per_actor,
        "frames_per_s": round(run["frames_per_s"]),
        "train_steps_per_s": round(run["train_steps_per_s"], 2),
        "mean_inference_batch": round(run["mean_batch"], 1),
        "policy_lag": round(run["policy_lag"], 2),
        **{key: round(value, 4) for key, value in parts.items()},
        "cores": cores,
        "bound_frames_per_s": round(bound),
        "ratio_vs_bound": round(run["frames_per_s"] / bound, 3),
    }
    sys.stdout.write((json.dumps(result) if bench.json else json.dumps(result, indent=2)) + "\n")
    return 0
