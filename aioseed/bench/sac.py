"""``aioseed bench sac``: SAC's env steps/s and updates/s through real processes, beside the compute bound, for
today's update path and the fused one side by side.

Each path runs ``aioseed run --preset mujoco-sac`` (a learner and one actor process of 4 envs on loopback,
replay pacing) in a fresh spawned process, held A B B A so that a linear drift of the host's speed adds the
same to both means. Rates are read from the learner's metric snapshots once training has started. The bound
comes from the same machine in the same invocation, each part timed alone in this process: the env's step
(random actions, one core), one inference call on a message's rows, and one update (a fused call's time over
its updates). They are timed before and after the runs and averaged. The learner's core runs inference and
updates, the actor's core steps the envs, so the bound on env steps/s is the slower of the two: 1 /
(inference per row + updates per step x update) on the learner, 1 / env step on the actor.

Each update's time alone is split into compute and overhead: compute is its matrix products' float operations
(``aioseed.bench.flops``) at the rate this machine multiplies matrices of the update's shape, measured beside
the other parts; overhead is the rest.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from aioseed.bench.acting import order
from aioseed.bench.config import SacBench
from aioseed.bench.flops import dense_macs, matmul_flops_per_s, sac_update_flops
from aioseed.bench.spawned import run_in_process, timed_history
from aioseed.commands.run import RunConfig
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


@dataclasses.dataclass(frozen=True)
class UpdatePath:
    """One way of running SAC's updates: ``--sac.update``, updates per call and XLA."""

    update: str
    minibatches: int = 1
    jit_compile: bool = False
    precision: str = "float32"

    @property
    def name(self) -> str:
        if self.update == "separate":
            return self.update
        return f"fused x{self.minibatches}{' xla' if self.jit_compile else ''}{' bf16' if self.precision == 'bfloat16' else ''}"

    def applied(self, run: RunConfig, bench: SacBench) -> RunConfig:
        """``run`` on this path, each update on the preset's per-update batch, at the bench's replay settings."""
        learner = run.learner
        rows = learner.training.batch_size // learner.sac.minibatches
        sac = dataclasses.replace(
            learner.sac, update=self.update, minibatches=self.minibatches, jit_compile=self.jit_compile,
            min_replay_size=bench.min_replay_size, replay_ratio=bench.replay_ratio,
        )
        training = dataclasses.replace(learner.training, batch_size=rows * self.minibatches)
        learner = dataclasses.replace(learner, env=bench.env, sac=sac, training=training, precision=self.precision)
        return dataclasses.replace(run, learner=learner)


def part_timer(run: RunConfig, rows: int) -> Callable[[], dict[str, float]]:
    """A function that times inference of ``rows`` rows and one train step of ``run``'s batch of one-step
    unrolls, each alone, on one agent built once (``update_s`` is per update), and measures this machine's
    rate on the update's matrix products (``flops_per_s``); ``update_flops`` is an update's count."""
    from aioseed.algos.sac.agent import SacAgent
    from aioseed.envs.registry import env_spec

    config = run.learner
    spec = env_spec(config.env)
    agent = SacAgent(spec, config.sac, precision=config.precision)
    rng = np.random.default_rng(0)
    observations = rng.normal(size=(rows, *spec.observation_shape)).astype(spec.dtype)
    size, batch_size = spec.action_space.size, config.training.batch_size
    batch = {
        "observation": rng.normal(size=(2, batch_size, *spec.observation_shape)).astype(spec.dtype),
        "action": rng.normal(size=(2, batch_size, size)).astype(np.float32),
        "reward": rng.normal(size=(2, batch_size)).astype(np.float32),
        "done": np.zeros((2, batch_size), bool),
        "phantom": np.zeros((2, batch_size), bool),
    }
    updates = config.sac.minibatches
    update_rows = batch_size // updates
    flops = sac_update_flops(
        dense_macs(agent.network.actor.trainable_variables), dense_macs(agent.network.critics.trainable_variables),
        update_rows, config.sac.autotune_alpha,
    )
    width = max(config.sac.hidden_sizes)
    return lambda: {
        "inference_s": timed(lambda: agent.infer(observations, {}), 400),
        "update_s": timed(lambda: agent.train_step(batch), max(300 // updates, 30)) / updates,
        "flops_per_s": matmul_flops_per_s(update_rows, width, config.precision),
        "update_flops": flops,
    }


def run_rates(run: RunConfig, seconds: float, warmup_s: float) -> dict[str, float]:
    """Env steps/s and updates/s of a real run over its last ``seconds``, held after ``warmup_s`` from its first env
    frames (start-up left out: on a slow day the actors' start and the update's compile took most of a short run),
    between the first snapshot there with training and the last."""
    learner = dataclasses.replace(
        run.learner, logdir=None, tensorboard=False, metrics_every_s=1.0,
        stop=StopConfig(after_training_seconds=warmup_s + seconds), console=dataclasses.replace(run.learner.console, enabled=False),
    )
    history = timed_history(run_in_process(dataclasses.replace(run, learner=learner), warmup_s + seconds))
    start_at = history[-1]["time"] - seconds
    training = [s for s in history if s["time"] >= start_at and s.get("learner/train_steps", 0) > 0]
    if len(training) < 2:
        raise RuntimeError(f"training ran for fewer than two snapshots in the {seconds:g} s hold; give it more --warmup-s or --seconds")
    first, last = training[0], training[-1]
    elapsed = last["time"] - first["time"]
    return {
        "env_steps_per_s": (last["charts/frames"] - first["charts/frames"]) / elapsed,
        "updates_per_s": (last["learner/train_steps"] - first["learner/train_steps"]) / elapsed,
        "measured_s": elapsed,
    }


def updates_per_env_step(run: RunConfig, replay_ratio: float) -> float:
    """Updates per env step at ``replay_ratio`` (unroll_length 1: an unroll is one env step), each on the per-update batch."""
    return replay_ratio / (run.learner.training.batch_size / run.learner.sac.minibatches)


def path_figures(run: RunConfig, bench: SacBench, holds: list[dict[str, float]], alone: dict[str, float]) -> dict[str, Any]:
    """A path's mean rates over its holds beside the bound its parts imply."""
    rows = run.envs_per_message
    updates_per_step = updates_per_env_step(run, bench.replay_ratio)
    env_s = alone["env_s"]
    learner_s = alone["inference_s"] / rows + updates_per_step * alone["update_s"]
    bound = min(1.0 / env_s, 1.0 / learner_s)
    env_steps = statistics.fmean(h["env_steps_per_s"] for h in holds)
    compute_s = alone["update_flops"] / alone["flops_per_s"]
    return {
        "env_steps_per_s": round(env_steps, 1),
        "updates_per_s": round(statistics.fmean(h["updates_per_s"] for h in holds), 1),
        "holds_updates_per_s": [round(h["updates_per_s"], 1) for h in holds],
        "bound_env_steps_per_s": round(bound, 1),
        "env_steps_vs_bound": round(env_steps / bound, 3),
        "alone": {
            "env_step_ms": round(env_s * 1e3, 4),
            f"inference_ms_{rows}_rows": round(alone["inference_s"] * 1e3, 3),
            "update_ms": round(alone["update_s"] * 1e3, 3),
            "update_gflop": round(alone["update_flops"] / 1e9, 4),
            "matmul_gflop_per_s": round(alone["flops_per_s"] / 1e9, 1),
            "update_compute_ms": round(compute_s * 1e3, 3),
            "update_overhead_ms": round((alone["update_s"] - compute_s) * 1e3, 3),
            "learner_bound_env_steps_per_s": round(1.0 / learner_s, 1),
            "actor_bound_env_steps_per_s": round(1.0 / env_s, 1),
        },
    }


def main(bench: SacBench) -> int:
    base = preset("mujoco-sac")
    paths = (UpdatePath("separate"), UpdatePath("fused", bench.minibatches, bench.jit_compile, bench.precision))
    runs = {path.name: path.applied(base, bench) for path in paths}
    timers = {name: part_timer(run, run.envs_per_message) for name, run in runs.items()}
    # The parts timed before and after the runs, averaged: a linear drift of the host's speed cancels.
    before = {name: {"env_s": env_step_seconds(bench.env), **timer()} for name, timer in timers.items()}
    holds: dict[str, list[dict[str, float]]] = {name: [] for name in runs}
    for name in order(tuple(runs)):
        holds[name].append(run_rates(runs[name], bench.seconds, bench.warmup_s))
    after = {name: {"env_s": env_step_seconds(bench.env), **timer()} for name, timer in timers.items()}
    figures = {
        name: path_figures(runs[name], bench, holds[name], {key: (before[name][key] + after[name][key]) / 2 for key in before[name]})
        for name in runs
    }
    baseline, fused = (figures[path.name] for path in paths)
    result = {
        "env": bench.env,
        "replay_ratio": bench.replay_ratio,
        "updates_per_env_step": updates_per_env_step(base, bench.replay_ratio),
        "paths": figures,
        "updates_per_s_ratio": round(fused["updates_per_s"] / baseline["updates_per_s"], 3),
        "update_ms_ratio": round(baseline["alone"]["update_ms"] / fused["alone"]["update_ms"], 3),
    }
    sys.stdout.write((json.dumps(result) if bench.json else json.dumps(result, indent=2)) + "\n")
    return 0
