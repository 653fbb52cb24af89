"""The auto-tuner inside a real learner: real actors over loopback, the settings it stages, the
metrics it reports, a manual change turning it off, and a pause holding it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from tests.conftest import small_config
from tests.waiting import until

from aioseed.clients.actor import Actor, ActorConfig


@contextlib.asynccontextmanager
async def tuning(running_learner, tmp_path) -> AsyncIterator:
    """A learner with the tuner on from a bad start, 16 envs one to a message, once the tuner has raised the batch size."""
    config = small_config(
        tmp_path,
        console={"enabled": False},
        metrics_every_s=0.2,
        batcher={"max_batch_size": 1, "deadline_ms": 0.1},
        batching={"auto": True, "hold_s": 0.6, "settle_s": 0.2, "latency_target_ms": None},
    )
    async with running_learner(config) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=16, envs_per_message=1))
        task = asyncio.create_task(actor.run())
        try:
            await until(lambda: learner.settings()["max_batch_size"] > 1, "the tuner to raise the batch size", 3000)
            yield learner
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_auto_mode_moves_the_settings_and_a_manual_change_turns_it_off(running_learner, tmp_path) -> None:
    async with tuning(running_learner, tmp_path) as learner:
        settings = learner.settings()
        assert settings["auto"]["enabled"] and "batch" in settings["auto"]["reason"]  # e.g. "took batch 2, ..."
        await until(lambda: learner.metrics().get("batching/max_batch_size", 0) > 1, "the metrics to show the tuner's choice")
        assert learner.metrics()["batching/auto"] == 1.0
        learner.configure_batcher(max_batch_size=8, deadline_ms=1.0)
        assert not learner.batching_auto and learner.settings()["auto"]["reason"] == "off: a manual change"
        await asyncio.sleep(2.0)  # several tuner intervals: nothing moves the manual setting
        assert (learner.settings()["max_batch_size"], learner.settings()["deadline_ms"]) == (8, 1.0)


async def test_a_paused_learner_holds_the_tuners_setting_and_search(running_learner, tmp_path) -> None:
    """Paused, acting stalls at the full queue: every setting would measure 0 steps/s, so the tuner
    measures nothing until training resumes (it used to restart its search, and could divide by a 0 home)."""
    async with tuning(running_learner, tmp_path) as learner:
        learner.pause()
        held = learner.settings()
        await asyncio.sleep(3.0)  # 15 tuner intervals, 5 holds: a search would have moved by now
        assert learner.settings() == held and learner.batching_auto
        learner.resume()
        await until(lambda: learner.settings() != held, "the tuner to go on after the pause", 3000)
