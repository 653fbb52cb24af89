"""Acting modes: how far acting may run ahead of training (``Pacing``), alone and in a real learner."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import threading

import numpy as np
import pytest
from tests.conftest import small_config
from tests.waiting import until

from aioseed.algos.impala.config import ImpalaConfig
from aioseed.clients.actor import Actor, ActorConfig
from aioseed.server.acting.core_states import CoreStates
from aioseed.server.acting.env_table import EnvTable
from aioseed.server.acting.inference import InferenceLoop
from aioseed.server.acting.step import Acting
from aioseed.server.batching.batcher import Batcher, BatcherConfig
from aioseed.server.training.trainer import TrainingConfig
from aioseed.server.trajectories.pacing import Pacing
from aioseed.server.trajectories.unroll_store import UnrollStore
from aioseed.types import Rows, step_columns

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
    assert pacing.defers()  # those 3 envs' next steps are the next batch's: they wait for its policy
    assert pacing.completed(1) and await _blocks(pacing)  # the batch is complete
    pacing.trained(version=4)
    assert not await _blocks(pacing) and pacing.allowance == 4


async def test_bounded_acting_runs_one_batch_ahead() -> None:
    pacing = Pacing("bounded", batch_size=4)
    assert not pacing.completed(4) and not await _blocks(pacing)  # the first batch, then one ahead of it
    assert not pacing.defers()  # the first batch's envs act the batch ahead on the first policy
    assert not pacing.completed(1) and pacing.defers()  # the batch ahead's envs wait for the first update
    assert pacing.completed(3) and await _blocks(pacing)
    pacing.trained(version=4)
    assert not await _blocks(pacing) and not pacing.defers()


async def test_a_live_switch_counts_the_backlog_async_acting_left_and_bounds_the_lag_from_then_on() -> None:
    pacing = Pacing("async", batch_size=4)
    assert not pacing.completed(12) and not await _blocks(pacing)  # async: three batches queued, never held
    pacing.switch("synchronous")
    assert await _blocks(pacing) and pacing.allowance == 4 - 12  # the backlog trains first
    pacing.trained(version=1)
    pacing.trained(version=2)
    assert await _blocks(pacing)  # one queued batch still to train
    pacing.trained(version=3)
    assert not await _blocks(pacing) and pacing.allowance == 4 and pacing.redoes
    pacing.switch("bounded", lag_bound=3)  # nothing queued: three batches beyond the one training
    assert pacing.allowance == 16 and pacing.lag_bound == 3
    assert not pacing.completed(15) and pacing.completed(1) and await _blocks(pacing)
    pacing.switch("async")
    assert not await _blocks(pacing) and not pacing.paced
    with pytest.raises(ValueError, match="replay pacing needs"):
        pacing.switch("replay")  # a pacing given no replay credit
    with pytest.raises(ValueError, match="lag_bound must be >= 1"):
        pacing.switch("bounded", lag_bound=0)


async def test_replay_acting_holds_the_replay_ratio_and_never_redoes() -> None:
    """256 unrolls a batch at a ratio of 128: each train batch lets acting insert 2 more, after the minimum."""
    pacing = Pacing("replay", batch_size=256, credit=256 / 128, start=10 + 2)
    assert not pacing.redoes
    assert not pacing.completed(8) and not await _blocks(pacing)
    assert pacing.completed(8) and await _blocks(pacing)  # 16 inserted of 12 allowed: wait
    for version in (1, 2):  # 4 over: two train batches pay it back, the third lets acting on
        pacing.trained(version)
        assert await _blocks(pacing)
    pacing.trained(version=3)
    assert not await _blocks(pacing) and pacing.allowance == 2
    assert not pacing.stale(0)  # off-policy: a batch acted before an update stands
    with pytest.raises(ValueError, match="credit"):
        Pacing("replay", batch_size=256)


async def test_replay_acting_resumes_a_restored_runs_count_instead_of_starting_over() -> None:
    """A run stopped with 100 unrolls inserted and 90 batches trained (a minimum of 10, then one unroll per
    batch) may act on only as far as it could before it stopped, not another replay minimum ahead."""
    resumed, fresh = (Pacing("replay", batch_size=256, credit=1.0, start=10 + 1 + 2) for _ in range(2))
    resumed.resume(completed=100, trained=90)
    assert resumed.allowance == 3  # 13 + 90 x 1 - 100: as before the stop
    assert resumed.completed(3) and await _blocks(resumed)
    # Stopped while acting waited for training: acting still gets one batch's credit, or the restored replay,
    # which trains only once a new unroll has confirmed its layout, would never train (nor acting act).
    resumed.resume(completed=200, trained=90)
    assert resumed.allowance == 1 and not await _blocks(resumed)
    assert resumed.completed(1) and await _blocks(resumed)
    fresh.resume(completed=0, trained=0)  # nothing restored: the minimum fills first
    assert fresh.allowance == 13 and not await _blocks(fresh)
    synchronous = Pacing("synchronous", batch_size=4)
    synchronous.resume(completed=100, trained=90)  # its queues are not checkpointed: a fresh start
    assert synchronous.allowance == 4


def test_a_batch_acted_before_the_latest_update_is_stale_in_paced_modes_only() -> None:
    bounded, free = Pacing("bounded", batch_size=4), Pacing("async", batch_size=4)
    for pacing in (bounded, free):
        pacing.completed(4)
        pacing.trained(version=3)
    assert bounded.stale(2) and not bounded.stale(3) and not bounded.stale(4)
    assert not free.stale(0)


async def test_an_overshoot_is_carried_into_the_next_batch() -> None:
    pacing = Pacing("synchronous", batch_size=4)
    assert pacing.completed(6) and pacing.allowance == -2
    pacing.trained(version=1)
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


# ---- in the inference loop, with a policy that answers its parameter version ----------------------


class VersionPolicy:
    """Acts with the ``version`` it starts on as its action; its first call waits for ``release``."""

    def __init__(self) -> None:
        self.version = 0
        self.entered, self.release = threading.Event(), threading.Event()

    def infer(self, observations, state, slots, evaluation=None, rewards=None):
        version = self.version
        self.entered.set()
        self.release.wait(5.0)
        return {"action": np.full(len(slots), version, np.int32)}, {"count": state["count"]}


async def test_a_batch_whose_policy_ran_across_an_update_is_answered_by_the_updated_policy() -> None:
    """Bounded mode: acting need not wait, but a batch read as version 0 while the update to version 1
    landed is asked again, so that none of its steps counts as acted before the latest update."""
    columns = {"count": ((1,), np.float32)}
    store = UnrollStore(4, {**step_columns((), np.float32), "action": ((), np.int32), **columns}, overlap=1)
    policy, pacing = VersionPolicy(), Pacing("bounded", batch_size=2)
    acting = Acting(
        policy=policy, envs=EnvTable(), store=store, version=lambda: policy.version, space=2**31 - 1, stacker=None,
        states=CoreStates(columns),
    )
    batcher = Batcher(BatcherConfig(max_batch_size=2, deadline_ms=50.0))
    loop = InferenceLoop(batcher, acting, asyncio.Queue(), lambda *_: None, pacing=pacing)
    runner = asyncio.create_task(loop.run())
    try:
        answer = loop.submit(Rows(slot=np.array([0, 1], np.int32), run_id=np.ones(2, np.uint64), reward=np.zeros(2, np.float32),
                                  flags=np.zeros(2, np.uint8), observation=np.zeros(2, np.float32), evaluation=np.zeros(2, bool)))
        await asyncio.to_thread(policy.entered.wait, 5.0)
        policy.version = 1  # an update lands while the policy runs
        pacing.trained(version=1)
        policy.release.set()
        result = await asyncio.wait_for(answer, timeout=10)
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    assert result["action"].tolist() == [1, 1]  # without the redo: [0, 0], acted before the update


# ---- in a learner, with a real actor over loopback ------------------------------------------------

ENVS, UNROLL = 4, 8
REUSE = ImpalaConfig(epochs=2, minibatches=2, ppo_clip=0.2)
UPDATES = REUSE.epochs * REUSE.minibatches


async def _train(running_learner, tmp_path, acting: str, steps: int = 12, per_message: int = ENVS) -> list[dict[str, float]]:
    """Serves CartPole with one actor whose envs travel ``per_message`` to a message, each message an
    inference batch of its own; returns the metric snapshots."""
    training = TrainingConfig(unroll_length=UNROLL, batch_size=ENVS, queue_capacity=ENVS, acting=acting)
    config = small_config(tmp_path, training=training, impala=REUSE, batcher={"max_batch_size": per_message})
    config = dataclasses.replace(config, metrics_every_s=0.02)
    async with running_learner(config) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=ENVS, envs_per_message=per_message, seed=0))
        task = asyncio.create_task(actor.run())
        try:
            await until(lambda: learner.train_steps >= steps * UPDATES, f"{steps} train steps", 3000)
        finally:
            task.cancel()
        return [point for point in learner.series() if not math.isnan(point.get("learner/policy_lag", math.nan))]


@pytest.mark.parametrize("per_message", [ENVS, 1])
async def test_synchronous_mode_trains_every_batch_on_the_policy_that_acted(running_learner, tmp_path, per_message: int) -> None:
    """With one env a message, a train batch's unrolls complete in several inference batches: each of them
    waits for the update too, or its envs would act their next steps on the policy before it."""
    points = await _train(running_learner, tmp_path, "synchronous", per_message=per_message)
    assert len(points) >= 3
    for point in points:
        # Each train step starts at the version that acted every row, the first of each unroll included
        # (answered again after the update): the lag is 0, 1, ... UPDATES - 1 over the step's updates.
        assert point["learner/policy_lag"] == (UPDATES - 1) / 2, point
        assert point["learner/policy_lag_max"] == UPDATES - 1, point
        # The proximal policy that computes the targets is the behaviour policy.
        assert point["policy/kl_behaviour"] < 1e-6 and point["policy/rho_clipped_mean"] > 1 - 1e-5, point
        assert point["policy/rho_below_half"] == 0.0


@pytest.mark.parametrize("per_message", [ENVS, 1])
async def test_bounded_mode_keeps_the_lag_within_two_batches_of_updates(running_learner, tmp_path, per_message: int) -> None:
    """With one env a message, the batch that closes acting is one of several; the others' envs act on."""
    points = await _train(running_learner, tmp_path, "bounded", per_message=per_message)
    assert len(points) >= 3
    # Batch n + 2 starts on the version batch n's updates reached: lag U at its first update, 2U - 1 at its
    # last (async reached 3U - 1 here before the redo). A batch whose policy ran while batch n's last update
    # landed is asked again, or its version, read before the policy ran, would count one update low.
    assert max(point["learner/policy_lag_max"] for point in points) <= 2 * UPDATES - 1
