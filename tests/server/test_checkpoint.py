"""Checkpoints: periodic and at shutdown; a restarted learner resumes counters and parameters."""

from __future__ import annotations

import asyncio

import numpy as np

from tests.conftest import small_config

from aioseed.clients.actor import Actor, ActorConfig


async def test_restart_restores_step_counter_and_parameters(running_learner, tmp_path) -> None:
    config = small_config(tmp_path, checkpoint_every_s=0.5)
    async with running_learner(config) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=8, envs_per_message=8))
        task = asyncio.create_task(actor.run())
        for _ in range(3000):
            if learner.trainer.version >= 20 and list((tmp_path / "checkpoints").glob("ckpt-*.index")):
                break
            await asyncio.sleep(0.01)
        assert learner.trainer.version >= 20, "no training happened"
        assert list((tmp_path / "checkpoints").glob("ckpt-*.index")), "no periodic checkpoint"
        task.cancel()
    # the block's end stopped the learner, which wrote a final checkpoint
    steps, frames = learner.trainer.version, learner.frames
    weights = [w.numpy().copy() for w in learner.agent.network.weights]

    async with running_learner(config) as restarted:
        assert restarted.trainer.version == steps
        assert restarted.frames == frames
        restored = [w.numpy() for w in restarted.agent.network.weights]
        assert len(restored) == len(weights)
        for before, after in zip(weights, restored):
            np.testing.assert_array_equal(before, after)
        assert restarted.agent.optimizer.iterations.numpy() == steps
