"""Checkpoints: periodic and at shutdown; a restarted learner resumes counters and parameters."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.conftest import small_config
from tests.waiting import until

from aioseed.clients.actor import Actor, ActorConfig


@pytest.mark.parametrize("agent", ["impala", "r2d2"])
async def test_restart_restores_step_counter_and_parameters(running_learner, tmp_path, agent) -> None:
    from aioseed.presets import preset

    config = small_config(tmp_path, checkpoint_every_s=0.5, agent=agent, r2d2=preset("r2d2-cartpole").learner.r2d2)
    async with running_learner(config) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=8, envs_per_message=8))
        task = asyncio.create_task(actor.run())
        await until(lambda: learner.train_steps >= 20, "20 updates", 3000)
        await until(lambda: list((tmp_path / "checkpoints").glob("ckpt-*.index")), "a periodic checkpoint", 3000)
        task.cancel()
    # the block's end stopped the learner, which wrote a final checkpoint
    steps, frames = learner.train_steps, learner.frames
    networks = ["network", "target_network"] if agent == "r2d2" else ["network"]
    weights = [w.numpy().copy() for name in networks for w in getattr(learner.agent, name).weights]

    async with running_learner(config) as restarted:
        assert restarted.train_steps == steps
        assert restarted.frames == frames
        restored = [w.numpy() for name in networks for w in getattr(restarted.agent, name).weights]
        assert len(restored) == len(weights)
        for before, after in zip(weights, restored):
            np.testing.assert_array_equal(before, after)
        assert restarted.agent.optimizer.iterations.numpy() == steps
