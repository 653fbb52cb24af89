"""Refusals are all counted, by status, and logged at a bounded rate."""

from __future__ import annotations

import dataclasses

import grpc
import structlog
from tests.conftest import small_config
from tests.wire import CARTPOLE, hello, refused

from aioseed.server.transport.refusals import Refusals


def test_every_refusal_is_counted_and_one_line_per_status_and_interval_is_logged() -> None:
    now = [0.0]
    refusals = Refusals(every_s=10.0, clock=lambda: now[0])
    with structlog.testing.capture_logs() as logs:
        for _ in range(1000):
            refusals.record("RESOURCE_EXHAUSTED", "ipv4:10.0.0.1:5", "too many")
        refusals.record("INVALID_ARGUMENT", "ipv4:10.0.0.1:5", "bad bytes")
        now[0] = 10.5
        refusals.record("RESOURCE_EXHAUSTED", "ipv4:10.0.0.1:5", "too many")
    assert [(line["code"], line["unlogged_since"]) for line in logs] == [
        ("RESOURCE_EXHAUSTED", 0), ("INVALID_ARGUMENT", 0), ("RESOURCE_EXHAUSTED", 999)
    ]
    assert refusals.metrics() == {"refusals/total": 1002.0, "refusals/resource_exhausted": 1001.0, "refusals/invalid_argument": 1.0}


def test_cycles_are_collected_while_refusals_come_in_and_once_more_after_the_last() -> None:
    refusals = Refusals()
    refusals.collect_cycles()
    assert refusals.collections == 0 and refusals.collected  # no refusals, no collection
    refusals.record("INVALID_ARGUMENT", "ipv4:10.0.0.1:5", "bad bytes")
    assert not refusals.collected
    refusals.collect_cycles()  # the refused call may not have ended yet: one more collection is owed
    assert refusals.collections == 1 and not refusals.collected
    refusals.collect_cycles()
    assert refusals.collections == 2 and refusals.collected
    refusals.collect_cycles()
    assert refusals.collections == 2


async def test_a_learners_refusals_reach_its_metrics(running_learner, tmp_path) -> None:
    async with running_learner(small_config(tmp_path, console={"enabled": False})) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            for _ in range(3):
                error = await refused(channel, hello(1, dataclasses.replace(CARTPOLE, action_space=7)))
                assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        metrics = learner._stages.service.metrics()
        assert metrics["refusals/failed_precondition"] == 3.0 and metrics["refusals/total"] == 3.0
