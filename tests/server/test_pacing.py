"""Acting modes: how far acting may run ahead of training (``Pacing``), alone and in a real learner."""

from __future__ import annotations

import asyncio
import dataclasses
import math

import numpy as np
import pytest
from tests.conftest import small_config
from tests.waiting import until

from aioseed.algos.impala.config import ImpalaConfig
from aioseed.clients.actor import Actor, ActorConfig
from aioseed.server.pacing import Pacing
from aioseed.server.training import TrainingConfig
from aioseed.server.unroll_store import UnrollStore

# ---- Pacing alone -------------------------------------------------------------------------------


async def _blocks(pacing: Pacing) -> bool:
    try:
        await asyncio.wait_for(pacing.ready(), 0.05)
    except TimeoutError:
        return True
    return False


async def test_synchronous_acting_waits_from_a_complete_batch_until_its_update() -> None:
    pacing = Pacing("synchronous", batch_size=4)
    assert not pacing.completed(3) and not await _blocks(pacing)
    assert pacing.completed(1) and await _blocks(pacing)  # the batch is complete
    pacing.trained()
    assert not await _blocks(pacing) and pacing.allowance == 4


async def test_bounded_acting_runs_one_batch_ahead() -> None:
    pacing = Pacing("bounded", batch_size=4)
    assert not pacing.completed(4) and not await _blocks(pacing)  # the first batch, then one ahead of it
    assert pacing.completed(4) and await _blocks(pacing)
    pacing.trained()
    assert not await _blocks(pacing)


async def test_an_overshoot_is_carried_into_the_next_batch() -> None:
    pacing = Pacing("synchronous", batch_size=4)
    assert pacing.completed(6) and pacing.allowance == -2
    pacing.trained()
    assert pacing.allowance == 2 and not await _blocks(pacing)


async def test_async_acting_never_waits() -> None:
    pacing = Pacing("async", batch_size=4)
    assert not pacing.completed(1000) and not await _blocks(pacing) and pacing.allowance == math.inf
    with pytest.raises(ValueError, match="unknown acting mode"):
        Pacing("lockstep", 4)  # type: ignore[arg-type]


def test_rewrite_last_replaces_the_newest_step_and_leaves_emitted_unrolls_alone() -> None:
    store = UnrollStore(2, {"action": ((), np.int32)})
    slots = np.array([0, 1])
    for action in (1, 2):
        store.append(slots, {"action": np.full(2, action, np.int32)})
    emitted = store.append(slots, {"action": np.full(2, 3, np.int32)})
    assert emitted is not None
    store.rewrite_last(slots, {"action": np.array([7, 8], np.int32), "unknown": np.zeros(2)})
    assert emitted["action"].tolist() == [[1, 2, 3], [1, 2, 3]]
    assert store.append(slots, {"action": np.full(2, 4, np.int32)}) is None
    out = store.append(slots, {"action": np.full(2, 5, np.int32)})
    assert out is not None and out["action"].tolist() == [[7, 4, 5], [8, 4, 5]]  # the boundary step rewritten
    with pytest.raises(ValueError, match="without a step"):
        store.rewrite_last(np.array([5]), {"action": np.zeros(1, np.int32)})


# ---- in a learner, with a real actor over loopback ------------------------------------------------

ENVS, UNROLL = 4, 8
REUSE = ImpalaConfig(epochs=2, minibatches=2, ppo_clip=0.2)
UPDATES = REUSE.epochs * REUSE.minibatches


async def _train(running_learner, tmp_path, acting: str, steps: int = 12) -> list[dict[str, float]]:
    """Serves CartPole with one actor whose envs all travel in one message; returns the metric snapshots."""
    training = TrainingConfig(unroll_length=UNROLL, batch_size=ENVS, queue_capacity=ENVS, acting=acting)
    config = dataclasses.replace(small_config(tmp_path, training=training, impala=REUSE), metrics_every_s=0.02)
    async with running_learner(config) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=ENVS, envs_per_message=ENVS, seed=0))
        task = asyncio.create_task(actor.run())
        try:
            await until(lambda: learner.train_steps >= steps * UPDATES, f"{steps} train steps", 3000)
        finally:
            task.cancel()
        return [point for point in learner.series() if not math.isnan(point.get("learner/policy_lag", math.nan))]


async def test_synchronous_mode_trains_every_batch_on_the_policy_that_acted(running_learner, tmp_path) -> None:
    points = await _train(running_learner, tmp_path, "synchronous")
    assert len(points) >= 3
    for point in points:
        # Each train step starts at the version that acted every row, the first of each unroll included
        # (answered again after the update): the lag is 0, 1, ... UPDATES - 1 over the step's updates.
        assert point["learner/policy_lag"] == (UPDATES - 1) / 2, point
        assert point["learner/policy_lag_max"] == UPDATES - 1, point
        # The proximal policy that computes the targets is the behaviour policy.
        assert point["policy/kl_behaviour"] < 1e-6 and point["policy/rho_clipped_mean"] > 1 - 1e-5, point
        assert point["policy/rho_below_half"] == 0.0


async def test_bounded_mode_keeps_the_lag_within_two_batches_of_updates(running_learner, tmp_path) -> None:
    points = await _train(running_learner, tmp_path, "bounded")
    assert len(points) >= 3
    # A row's version is read before its policy runs, so an update landing during that call counts one
    # low: 2 x UPDATES, not 2 x UPDATES - 1 (async reached 3 x UPDATES - 1 here before the redo).
    assert max(point["learner/policy_lag_max"] for point in points) <= 2 * UPDATES
