"""The bounded unroll queue: when training stops, the queue fills, inference waits and the actors stall."""

from __future__ import annotations

import asyncio

from tests.conftest import small_config
from tests.waiting import until

from aioseed.clients.actor import Actor, ActorConfig
from aioseed.server.training.trainer import TrainingConfig

NUM_ENVS = 4
UNROLL = 5


async def test_paused_training_stalls_actors_and_resume_restarts_them(running_learner, tmp_path) -> None:
    training = TrainingConfig(unroll_length=UNROLL, batch_size=2, queue_capacity=4)
    async with running_learner(small_config(tmp_path, training=training)) as learner:
        learner.pause()
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=NUM_ENVS, envs_per_message=NUM_ENVS))
        task = asyncio.create_task(actor.run())
        await until(lambda: learner.queue_depth == training.queue_capacity, "the unroll queue to fill", 2000)
        at_full = actor.steps
        # Each env completes at most one more unroll before inference blocks on the full queue.
        await asyncio.sleep(0.5)
        stalled = actor.steps
        await asyncio.sleep(0.5)
        assert actor.steps == stalled, "actors kept stepping while the queue was full"
        assert stalled - at_full <= NUM_ENVS * (UNROLL + 1)
        assert learner.train_steps == 0
        assert learner.queue_depth == training.queue_capacity  # bounded: nothing grew, nothing dropped

        learner.resume()
        await until(lambda: learner.train_steps >= 5 and actor.steps > stalled + 100, "training and actors to resume", 2000)
        task.cancel()


async def test_a_paused_replay_stops_inserting_so_its_actors_stall_too(running_learner, tmp_path) -> None:
    """R2D2: paused, the replay takes no more unrolls (it used to take and evict them with no one training),
    so the queue fills and the actors stall as with V-trace; resumed, it inserts and trains again."""
    import dataclasses

    from aioseed.presets import preset

    r2d2 = dataclasses.replace(preset("r2d2-cartpole").learner.r2d2, min_replay_size=8)
    training = TrainingConfig(unroll_length=UNROLL, batch_size=4, queue_capacity=4)
    async with running_learner(small_config(tmp_path, agent="r2d2", r2d2=r2d2, training=training, metrics_every_s=0.1)) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=NUM_ENVS, envs_per_message=NUM_ENVS))
        task = asyncio.create_task(actor.run())
        await until(lambda: learner.train_steps >= 2, "R2D2 to train", 3000)
        learner.pause()
        await until(lambda: learner.queue_depth == training.queue_capacity, "the unroll queue to fill", 3000)
        await asyncio.sleep(0.5)
        stalled, inserted = actor.steps, learner.metrics()["replay/inserted"]
        await asyncio.sleep(0.5)
        assert actor.steps == stalled and learner.metrics()["replay/inserted"] == inserted
        learner.resume()

        def resumed() -> bool:
            return learner.metrics()["replay/inserted"] > inserted and actor.steps > stalled + 100

        await until(resumed, "inserts and actors to resume", 3000)
        task.cancel()
