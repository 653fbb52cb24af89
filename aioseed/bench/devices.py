"""``aioseed bench devices``: the train step on one device and data-parallel on several, side by side.

Both agents live in this process with the same network and start from the same weights; their
steps alternate on the same batch, so that drift in the host's speed hits both alike. On CPU
logical devices the replicas share the same cores: this measures what the strategy costs
(splitting, reduction, the mirrored update), not a speed-up, which needs devices of their own.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

from aioseed.bench.config import DevicesBench
from aioseed.compose.devices import place

NETWORK_SPECS = {
    "mlp": ((4,), "float32", 2),
    "nature_cnn": ((4, 84, 84), "uint8", 6),
}


def random_batch(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, actions: int, t: int, b: int) -> dict:
    steps = (t + 1, b)
    observation = rng.integers(0, 255, (*steps, *shape)) if dtype == "uint8" else rng.normal(size=(*steps, *shape))
    return {
        "observation": observation.astype(dtype),
        "action": rng.integers(0, actions, steps, dtype=np.int32),
        "logits": rng.normal(size=(*steps, actions)).astype(np.float32),
        "reward": rng.normal(size=steps).astype(np.float32),
        "done": rng.random(steps) < 0.02,
        "phantom": np.zeros(steps, bool),
    }


def timed(step, batch) -> float:
    started = time.perf_counter()
    step(batch)
    return (time.perf_counter() - started) * 1000.0


def measure(bench: DevicesBench, network: str) -> dict[str, object]:
    from aioseed.algos.impala.agent import ImpalaAgent
    from aioseed.algos.impala.config import ImpalaConfig
    from aioseed.algos.replicas import Replicas
    from aioseed.spec import EnvSpec

    shape, dtype, actions = NETWORK_SPECS[network]
    spec = EnvSpec(observation_shape=shape, observation_dtype=dtype, action_space=actions)
    config = ImpalaConfig(network=network)
    many = place(bench.devices)
    one = ImpalaAgent(spec, config, Replicas(many.training[:1]), seed=0)
    parallel = ImpalaAgent(spec, config, many, seed=0)
    for source, target in zip(one.network.weights, parallel.network.weights, strict=True):
        target.assign(source)
    batch = random_batch(np.random.default_rng(0), shape, dtype, actions, bench.unroll_length, bench.batch_size)
    for _ in range(3):
        one.train_step(batch)
        parallel.train_step(batch)
    single_ms, parallel_ms = [], []
    for _ in range(bench.steps):
        single_ms.append(timed(one.train_step, batch))
        parallel_ms.append(timed(parallel.train_step, batch))
    observations = batch["observation"][0]
    one.infer(observations, {})
    infer_ms = statistics.median(timed(lambda o: one.infer(o, {}), observations) for _ in range(bench.steps))
    single, both = statistics.median(single_ms), statistics.median(parallel_ms)
    return {
        "network": network,
        "batch": [bench.unroll_length + 1, bench.batch_size],
        "devices": list(many.training),
        "one_device_step_ms": round(single, 2),
        "parallel_step_ms": round(both, 2),
        "parallel_vs_one": round(both / single, 3),
        "inference_ms_batch": round(infer_ms, 2),
    }


def main(bench: DevicesBench) -> int:
    for network in bench.networks:
        result = measure(bench, network)
        sys.stdout.write((json.dumps(result) if bench.json else json.dumps(result, indent=2)) + "\n")
    return 0
