"""``aioseed bench sac``: SAC's env steps/s and updates/s through real processes, beside the compute bound.

The run is ``aioseed run --preset mujoco-sac`` (a learner and one actor process of 4 envs on loopback,
replay pacing) in a fresh spawned process. Its rates are read from the learner's metric snapshots once
training has started. The bound comes from the same machine in the same invocation, each part timed
alone in this process: the env's step (random actions, one core), one inference call on a message's
rows, and one update of a batch. They are timed before and after the run and averaged, so that a linear
drift of the host's speed cancels. The learner's core runs inference and updates, the actor's core steps
the envs, so the bound on env steps/s is the slower of the two: 1 / (inference per row + updates per
step x update) on the learner, 1 / env step on the actor.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

from aioseed.bench.config import SacBench
from aioseed.bench.spawned import run_in_process, timed_history
from aioseed.presets import preset
from aioseed.server.config import StopConfig


def env_step_seconds(env_id: str, seconds: float = 2.0) -> float:
    """Seconds per step of one env with random actions, on one core."""
    env = gym.make(env_id, disable_env_checker=True)
    env.reset(seed=0)
    env.action_space.seed(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
            env.reset()
    env.close()
    return (time.perf_counter() - start) / steps


def timed(fn: Callable[[], object], repeats: int) -> float:
    """Median seconds of ``fn()`` over ``repeats`` calls, after two warm-up calls (tracing)."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def part_timer(env_id: str, rows: int, batch_size: int) -> Callable[[], dict[str, float]]:
    """A function that times inference of ``rows`` rows and one update of ``batch_size`` one-step unrolls,
    each alone, on one agent built once."""
    from aioseed.algos.sac.agent import SacAgent
    from aioseed.envs.registry import env_spec

    spec = env_spec(env_id)
    agent = SacAgent(spec, preset("mujoco-sac").learner.sac)
    rng = np.random.default_rng(0)
    observations = rng.normal(size=(rows, *spec.observation_shape)).astype(spec.dtype)
    size = spec.action_space.size
    batch = {
        "observation": rng.normal(size=(2, batch_size, *spec.observation_shape)).astype(spec.dtype),
        "action": rng.normal(size=(2, batch_size, size)).astype(np.float32),
        "reward": rng.normal(size=(2, batch_size)).astype(np.float32),
        "done": np.zeros((2, batch_size), bool),
        "phantom": np.zeros((2, batch_size), bool),
    }
    return lambda: {
        "inference_s": timed(lambda: agent.infer(observations, {}), 400),
        "update_s": timed(lambda: agent.train_step(batch), 300),
    }


def run_rates(bench: SacBench) -> dict[str, float]:
    """Env steps/s and updates/s of a real run, between the first snapshot with training and the last."""
    run = preset("mujoco-sac")
    sac = dataclasses.replace(run.learner.sac, min_replay_size=bench.min_replay_size, replay_ratio=bench.replay_ratio)
    learner = dataclasses.replace(
        run.learner, env=bench.env, sac=sac, logdir=None, tensorboard=False, metrics_every_s=1.0,
        stop=StopConfig(after_seconds=bench.seconds), console=dataclasses.replace(run.learner.console, enabled=False),
    )
    history = timed_history(run_in_process(dataclasses.replace(run, learner=learner), bench.seconds + 120))
    training = [s for s in history if s.get("learner/train_steps", 0) > 0]
    if len(training) < 2:
        raise RuntimeError(f"training ran for fewer than two snapshots in {bench.seconds:g} s; give it more --seconds")
    first, last = training[0], training[-1]
    elapsed = last["time"] - first["time"]
    return {
        "env_steps_per_s": (last["charts/frames"] - first["charts/frames"]) / elapsed,
        "updates_per_s": (last["learner/train_steps"] - first["learner/train_steps"]) / elapsed,
        "measured_s": elapsed,
    }


def main(bench: SacBench) -> int:
    run = preset("mujoco-sac")
    rows, batch_size = run.envs_per_message, run.learner.training.batch_size
    updates_per_step = bench.replay_ratio / batch_size  # unroll_length 1: one unroll is one env step
    time_parts = part_timer(bench.env, rows, batch_size)
    before = {"env_s": env_step_seconds(bench.env), **time_parts()}
    measured = run_rates(bench)
    after = {"env_s": env_step_seconds(bench.env), **time_parts()}
    # The parts timed before and after the run, averaged: a linear drift of the host's speed cancels.
    alone = {key: (before[key] + after[key]) / 2 for key in before}
    env_s = alone["env_s"]
    learner_s = alone["inference_s"] / rows + updates_per_step * alone["update_s"]
    bound = min(1.0 / env_s, 1.0 / learner_s)
    result = {
        "env": bench.env,
        "replay_ratio": bench.replay_ratio,
        "updates_per_env_step": updates_per_step,
        "env_steps_per_s": round(measured["env_steps_per_s"], 1),
        "updates_per_s": round(measured["updates_per_s"], 1),
        "measured_over_s": round(measured["measured_s"], 1),
        "bound_env_steps_per_s": round(bound, 1),
        "env_steps_vs_bound": round(measured["env_steps_per_s"] / bound, 3),
        "alone": {
            "env_step_ms": round(env_s * 1e3, 4),
            f"inference_ms_{rows}_rows": round(alone["inference_s"] * 1e3, 3),
            f"update_ms_batch_{batch_size}": round(alone["update_s"] * 1e3, 3),
            "learner_bound_env_steps_per_s": round(1.0 / learner_s, 1),
            "actor_bound_env_steps_per_s": round(1.0 / env_s, 1),
            "update_ms_before_after": [round(before["update_s"] * 1e3, 3), round(after["update_s"] * 1e3, 3)],
        },
    }
    sys.stdout.write((json.dumps(result) if bench.json else json.dumps(result, indent=2)) + "\n")
    return 0
