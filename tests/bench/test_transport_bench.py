"""``aioseed bench transport`` measures the learner (NullAgent) beside a raw grpc.aio echo, each in its own
spawned server process with real clients: both trials run and report round trips."""

from __future__ import annotations

import dataclasses

from aioseed.bench.transport import Trial, run_trial
from aioseed.server.batching.batcher import BatcherConfig


def test_the_learner_and_the_echo_both_serve_their_clients() -> None:
    trial = Trial("learner", streams=2, k=4, seconds=0.5, client_processes=1, batcher=BatcherConfig(max_batch_size=8), warmup_s=0.5)
    for server in ("echo", "learner"):
        result = run_trial(dataclasses.replace(trial, server=server))
        assert result["round_trips_per_s"] > 0 and len(result["per_stream"]) == 2, (server, result)
    assert result["batching"]["batcher/batch_size"] > 0  # the learner's batcher reported what it batched
