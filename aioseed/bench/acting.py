"""``aioseed bench acting``: training frames/s in each acting mode (async, bounded, synchronous).

Each mode trains the same set-up in a fresh process; the modes are held in order and then in reverse
(A B C C B A), so that the host's drift, linear over the run, adds the same to every mode's mean.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from aioseed.bench.atari import measure
from aioseed.bench.config import ActingBench


def order(modes: tuple[str, ...]) -> list[str]:
    """The holds: the modes, then the same in reverse."""
    return [*modes, *reversed(modes)]


def main(bench: ActingBench) -> int:
    held: dict[str, list[dict[str, float]]] = {mode: [] for mode in bench.modes}
    for mode in order(bench.modes):
        training = dataclasses.replace(bench.run.learner.training, acting=mode)
        run = dataclasses.replace(bench.run, learner=dataclasses.replace(bench.run.learner, training=training))
        held[mode].append(measure(run, bench.warmup_s, bench.seconds))
    baseline = mean_of(held[bench.modes[0]], "frames_per_s")
    for mode, runs in held.items():
        frames_per_s = mean_of(runs, "frames_per_s")
        result = {
            "preset": bench.run.preset,
            "env": bench.run.learner.env,
            "acting": mode,
            "frames_per_s": round(frames_per_s),
            "holds_frames_per_s": [round(r["frames_per_s"]) for r in runs],
            "policy_lag": round(mean_of(runs, "policy_lag"), 2),
            "ratio_vs_" + bench.modes[0]: round(frames_per_s / baseline, 3),
        }
        sys.stdout.write((json.dumps(result) if bench.json else json.dumps(result, indent=2)) + "\n")
    return 0


def mean_of(runs: list[dict[str, float]], key: str) -> float:
    """The mean of ``key`` over the holds ``runs``."""
    return sum(r[key] for r in runs) / len(runs)
