"""``aioseed bench precision``: the train step and inference in float32 and in bfloat16, side by side.

Both agents are built in this process with the same weights; each figure is held four times in the
order float32, bfloat16, bfloat16, float32, so that a linear drift of the host cancels in the ratio.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable

import numpy as np

from aioseed.bench.config import PrecisionBench

PRECISIONS = ("float32", "bfloat16")


def ms_per_call(work: Callable[[], object], seconds: float) -> float:
    """Wall milliseconds per call of ``work``, called for ``seconds`` after one warm-up call."""
    work()
    calls, started = 0, time.perf_counter()
    while calls == 0 or time.perf_counter() - started < seconds:
        work()
        calls += 1
    return (time.perf_counter() - started) / calls * 1e3


def abba(work: dict[str, Callable[[], object]], seconds: float) -> dict[str, float]:
    """Each precision's ms per call: the mean of its two holds in the order A B B A."""
    first, second = PRECISIONS
    held = {name: 0.0 for name in PRECISIONS}
    for name in (first, second, second, first):
        held[name] += ms_per_call(work[name], seconds) / 2
    return held


def main(bench: PrecisionBench) -> int:
    from aioseed.algos.agent import zero_state
    from aioseed.algos.impala.agent import ImpalaAgent
    from aioseed.compose.learner import learner_specs

    config = bench.run.learner
    _, spec = learner_specs(config)
    rng = np.random.default_rng(0)
    t, b = config.training.unroll_length, config.training.batch_size
    for network in bench.networks:
        impala = dataclasses.replace(config.impala, network=network)
        agents = {name: ImpalaAgent(spec, impala, seed=0, precision=name) for name in PRECISIONS}
        for source, target in zip(agents["float32"].network.variables, agents["bfloat16"].network.variables):
            target.assign(source)
        result: dict[str, object] = {"env": config.env, "network": network, "train_batch": [t + 1, b]}
        for rows in bench.inference_batches:
            observations = rng.integers(0, 255, (rows, *spec.observation_shape)).astype(spec.observation_dtype)
            state = zero_state(agents["float32"].state_columns(), rows)
            held = abba({name: lambda a=agent: a.infer(observations, state) for name, agent in agents.items()}, bench.seconds)
            result[f"inference_b{rows}_ms"] = {name: round(ms, 2) for name, ms in held.items()}
            result[f"inference_b{rows}_speedup"] = round(held["float32"] / held["bfloat16"], 2)
        shape = (t + 1, b)
        batch = {
            "observation": rng.integers(0, 255, (*shape, *spec.observation_shape)).astype(spec.observation_dtype),
            "action": rng.integers(0, spec.num_actions, shape, dtype=np.int32),
            "logits": rng.normal(size=(*shape, spec.num_actions)).astype(np.float32),
            "reward": rng.normal(size=shape).astype(np.float32),
            "done": np.zeros(shape, bool),
            "phantom": np.zeros(shape, bool),
            **zero_state(agents["float32"].state_columns(), b),
        }
        held = abba({name: lambda a=agent: a.train_step(batch) for name, agent in agents.items()}, bench.seconds)
        result["train_step_ms"] = {name: round(ms, 1) for name, ms in held.items()}
        result["train_step_speedup"] = round(held["float32"] / held["bfloat16"], 2)
        sys.stdout.write((json.dumps(result) if bench.json else json.dumps(result, indent=2)) + "\n")
    return 0
