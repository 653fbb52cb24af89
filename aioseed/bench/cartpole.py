"""``aioseed bench cartpole``: wall seconds and env steps until CartPole-v1 is solved.

Each run is a fresh spawned process doing what ``aioseed run`` does (a learner
plus local actor processes over loopback), timed from the launch of that
process, interpreter and TensorFlow start-up included, to the moment the mean
return over the last ``target_window`` episodes reaches ``target_return``. The
baseline measured in the same run is the environment's own stepping rate on one
core, so the end-to-end steps/s can be read against it. It prints only what it
measured in this run: peers' figures, from other days, are in docs/benchmarks.md.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time

import gymnasium as gym
import numpy as np

from aioseed.bench.config import CartpoleBench
from aioseed.bench.spawned import run_in_process
from aioseed.commands.run import RunConfig
from aioseed.server.config import StopConfig


def env_steps_per_s(env_id: str, seconds: float = 1.0) -> float:
    """Random-action stepping rate of one env on one core (the env's own speed)."""
    env = gym.make(env_id, disable_env_checker=True)
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(env.action_space.n, size=4096)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for action in actions[:1024]:
            _, _, terminated, truncated, _ = env.step(int(action))
            if terminated or truncated:
                env.reset()
        steps += 1024
    rate = steps / (time.perf_counter() - start)
    env.close()
    return rate


def timed_run(config: RunConfig, timeout_s: float) -> dict[str, float | int | bool]:
    launched = time.time()
    summary = run_in_process(config, timeout_s)
    solved = summary.stop_reason == "return"
    return {
        "solved": solved,
        "seconds": round(summary.stop_time - launched, 2) if solved and summary.stop_time else float("nan"),
        "env_steps": summary.stop_frames,
        "train_steps": summary.train_steps,
        "mean_return": round(summary.stop_mean_return, 1),
    }


def main(bench: CartpoleBench) -> int:
    baseline = env_steps_per_s(bench.run.learner.env)
    runs = []
    for index in range(bench.runs):
        learner = dataclasses.replace(
            bench.run.learner,
            seed=bench.seed + index,
            stop=StopConfig(at_return=bench.target_return, after_seconds=bench.timeout_s),
            return_window=bench.target_window,
        )
        run = timed_run(dataclasses.replace(bench.run, learner=learner), bench.timeout_s)
        runs.append(run)
        if not bench.json:
            sys.stderr.write(f"run {index}: {run}\n")
    solved = [r for r in runs if r["solved"]]
    result = {
        "env": bench.run.learner.env,
        "agent": "impala",
        "target_return": bench.target_return,
        "target_window": bench.target_window,
        "runs": runs,
        "solved_runs": len(solved),
        "median_seconds": statistics.median(r["seconds"] for r in solved) if solved else None,
        "median_env_steps": statistics.median(r["env_steps"] for r in solved) if solved else None,
        "median_steps_per_s": round(statistics.median(r["env_steps"] / r["seconds"] for r in solved)) if solved else None,
        "baseline_env_steps_per_s_one_core": round(baseline),
    }
    sys.stdout.write((json.dumps(result) if bench.json else json.dumps(result, indent=2)) + "\n")
    return 0 if len(solved) == len(runs) else 1
