"""``aioseed bench football``: end-to-end env steps/s on a gfootball scenario, and a learning run.

1. The engine alone: the actors' vector env (same scenario, representation and
   env count) stepped with random actions in this process, on one core.
2. ``aioseed run`` with the preset in a spawned process, one run that goes on
   until ``learn_frames`` or until the scoring target is met. Env steps/s is
   taken over its first ``seconds`` after ``warmup_s``, next to the engine's
   own rate times the actor processes that share the cores.
3. The learning figure: the fraction of the last ``return_window`` episodes
   that scored (scoring reward: an academy episode returns 1 or 0), when the
   run stopped, and the frames it took.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time

import numpy as np

from aioseed.bench.atari import core_seconds
from aioseed.bench.config import FootballBench
from aioseed.bench.spawned import run_in_process
from aioseed.server.config import ConsoleConfig, StopConfig


def engine_steps_per_s(bench: FootballBench) -> float:
    """The actors' envs alone on one core: env steps per second with random actions."""
    from aioseed.envs.registry import make_vector_env

    learner, num_envs = bench.run.learner, bench.run.envs_per_actor
    envs = make_vector_env(learner.env, num_envs, football=learner.football)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = envs.single_action_space.n

    def step() -> int:
        envs.step(rng.integers(0, actions, num_envs))
        return num_envs

    _, rate = core_seconds(step, bench.component_s)
    envs.close()
    return rate


def training_run(bench: FootballBench) -> dict[str, float | int | bool | None]:
    learning = bench.learn_frames > 0
    duration_s = bench.timeout_s if learning else bench.warmup_s + bench.seconds
    learner = dataclasses.replace(
        bench.run.learner,
        logdir=None,
        console=ConsoleConfig(enabled=False),
        stop=StopConfig(
            after_frames=bench.learn_frames if learning else None,
            at_return=bench.target_scoring if learning else None,
            after_seconds=duration_s,  # learning: the time limit, which ends the run with target_reached false
        ),
    )
    started = time.monotonic()
    summary = run_in_process(dataclasses.replace(bench.run, learner=learner), duration_s)
    points = summary.history
    t0 = points[0]["time"] + bench.warmup_s
    window = [p for p in points if t0 <= p["time"] <= t0 + bench.seconds] or points[-2:]
    first, last = window[0], window[-1]
    span_s = max(last["time"] - first["time"], 1e-9)
    reached = summary.stop_reason == "return"
    return {
        "env_steps_per_s": (last["charts/frames"] - first["charts/frames"]) / span_s,
        "train_steps_per_s": (last["learner/train_steps"] - first["learner/train_steps"]) / span_s,
        "scoring_fraction": summary.stop_mean_return if reached else summary.mean_return,
        "target_reached": reached,
        "frames": summary.stop_frames if reached else summary.frames,
        "wall_s": time.monotonic() - started,
    }


def main(bench: FootballBench) -> int:
    alone = engine_steps_per_s(bench)
    run = training_run(bench)
    actor_cores = min(bench.run.num_actors, os.cpu_count() or 1)
    result = {
        "env": bench.run.learner.env,
        "representation": bench.run.learner.football.representation,
        "stacked": bench.run.learner.football.stacked,
        "envs": bench.run.num_actors * bench.run.envs_per_actor,
        "env_steps_per_s": round(run["env_steps_per_s"]),
        "engine_steps_per_s_one_core": round(alone),
        "engine_bound_steps_per_s": round(alone * actor_cores),
        "ratio_vs_engine": round(run["env_steps_per_s"] / (alone * actor_cores), 3),
        "train_steps_per_s": round(run["train_steps_per_s"], 2),
        "learn_frames": bench.learn_frames,
        "scoring_fraction": round(run["scoring_fraction"], 3),
        "target_scoring": bench.target_scoring,
        "target_reached": run["target_reached"],
        "frames": run["frames"],
        "wall_s": round(run["wall_s"], 1),
    }
    sys.stdout.write((json.dumps(result) if bench.json else json.dumps(result, indent=2)) + "\n")
    return 0
