"""``aioseed bench presets``: presets' training frames/s side by side, each against its own compute bound.

Each preset trains exactly as ``aioseed run --preset NAME`` would (only the logdir and the console are
off) in a fresh process; the presets are held in order and then in reverse (A B B A), so that the host's
drift, linear over the run, adds the same to every preset's mean. Then each preset's components are
timed alone on the same cores (``aioseed.bench.atari.components``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any

from aioseed.bench.acting import mean_of, order
from aioseed.bench.atari import components, compute_bound, measure
from aioseed.bench.recipe_config import PresetsBench, arm_run
from aioseed.commands.run import RunConfig


def preset_run(name: str, env: str | None) -> RunConfig:
    """``aioseed run --preset NAME`` (on ``env`` when given)."""
    from aioseed.presets import preset

    return on_env(preset(name), env)


def on_env(run: RunConfig, env: str | None) -> RunConfig:
    """``run`` on ``env``, where given."""
    return run if env is None else dataclasses.replace(run, learner=dataclasses.replace(run.learner, env=env))


def describe(run: RunConfig) -> dict[str, Any]:
    """What sets a preset's speed: its agent, envs, acting mode, precision, batch and sample reuse (updates per
    batch, or how often a replay samples each stored step)."""
    from aioseed.algos.registry import algorithm
    from aioseed.compose.sources import replay_settings

    learner, training = run.learner, run.learner.training
    trains = algorithm(learner.agent)
    reuse: dict[str, Any]
    if trains.replay is None:
        settings = trains.settings(learner)
        split = trains.split(settings, training.batch_size, training.unroll_length)
        reuse = {"epochs_x_minibatches": [getattr(settings, "epochs", 1), split.minibatches]}
    else:
        reuse = {"replay_ratio": replay_settings(learner).ratio}
    return {
        "preset": run.preset,
        "agent": learner.agent,
        "env": learner.env,
        "envs": run.num_actors * run.envs_per_actor,
        "envs_per_message": run.envs_per_message,
        "acting": training.acting,
        "precision": learner.precision,
        "train_batch": [training.unroll_length, training.batch_size],
        **reuse,
    }


def main(bench: PresetsBench) -> int:
    runs = {name: preset_run(name, bench.env) for name in bench.presets}
    for label, arm in zip(bench.labels[len(bench.presets) :], bench.arms):
        runs[label] = on_env(arm_run(arm), bench.env)
    held: dict[str, list[dict[str, float]]] = {label: [] for label in runs}
    for name in order(tuple(runs)):
        held[name].append(measure(runs[name], bench.warmup_s, bench.seconds))
    cores = os.cpu_count() or 1
    baseline = mean_of(held[bench.presets[0]], "frames_per_s")
    for name, holds in held.items():
        frames_per_s = mean_of(holds, "frames_per_s")
        parts = components(runs[name], mean_of(holds, "mean_batch"), bench.component_s)
        bound = compute_bound(parts, cores)
        result = {
            "arm": name,
            **describe(runs[name]),
            "frames_per_s": round(frames_per_s),
            "holds_frames_per_s": [round(h["frames_per_s"]) for h in holds],
            "policy_lag": round(mean_of(holds, "policy_lag"), 2),
            "mean_inference_batch": round(mean_of(holds, "mean_batch"), 1),
            f"ratio_vs_{bench.presets[0]}": round(frames_per_s / baseline, 3),
            **{key: round(value, 4) for key, value in parts.items()},
            "cores": cores,
            "bound_frames_per_s": round(bound),
            "ratio_vs_bound": round(frames_per_s / bound, 3),
        }
        sys.stdout.write((json.dumps(result) if bench.json else json.dumps(result, indent=2)) + "\n")
        sys.stdout.flush()
    return 0
