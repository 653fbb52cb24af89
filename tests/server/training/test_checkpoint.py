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
        await learner.set_learning_rate(1.5e-4)  # as the console sets it
    # the block's end stopped the learner, which wrote a final checkpoint
    steps, frames, mean_return = learner.train_steps, learner.frames, learner.mean_return
    assert np.isfinite(mean_return)  # CartPole's episodes ended
    networks = ["network", "target_network"] if agent == "r2d2" else ["network"]
    weights = [w.numpy().copy() for name in networks for w in getattr(learner.agent, name).weights]

    async with running_learner(config) as restarted:
        assert restarted.train_steps == steps
        assert restarted.frames == frames
        assert restarted.mean_return == mean_return  # the episode window, not a new one from the restart's first episodes
        restored = [w.numpy() for name in networks for w in getattr(restarted.agent, name).weights]
        assert len(restored) == len(weights)
        for before, after in zip(weights, restored):
            np.testing.assert_array_equal(before, after)
        assert restarted.agent.optimizer.iterations.numpy() == steps
        assert restarted.agent.current_learning_rate == pytest.approx(1.5e-4)  # in effect before a train step: the console's figure


@pytest.mark.parametrize("agent", ["impala", "r2d2"])
async def test_init_checkpoint_warm_starts_a_new_run_with_a_fresh_optimizer(running_learner, tmp_path, agent) -> None:
    from aioseed.presets import preset

    r2d2 = preset("r2d2-cartpole").learner.r2d2
    async with running_learner(small_config(tmp_path / "a", agent=agent, r2d2=r2d2)) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=8, envs_per_message=8))
        task = asyncio.create_task(actor.run())
        await until(lambda: learner.train_steps >= 10, "10 updates", 3000)
        task.cancel()
    steps = learner.train_steps  # the source's final checkpoint, written at its stop
    networks = ["network", "target_network"] if agent == "r2d2" else ["network"]
    trained = [w.numpy().copy() for name in networks for w in getattr(learner.agent, name).weights]

    for init_optimizer, logdir in ((False, "b"), (True, "c")):
        config = small_config(tmp_path / logdir, agent=agent, r2d2=r2d2, init_checkpoint=tmp_path / "a", init_optimizer=init_optimizer)
        async with running_learner(config) as warm:
            assert (warm.train_steps, warm.frames) == (0, 0)  # a new run
            loaded = [w.numpy() for name in networks for w in getattr(warm.agent, name).weights]
            for before, after in zip(trained, loaded, strict=True):
                np.testing.assert_array_equal(before, after)
            assert warm.agent.optimizer.iterations.numpy() == (steps if init_optimizer else 0)


async def test_an_init_checkpoint_of_another_network_is_a_clear_error(running_learner, tmp_path) -> None:
    async with running_learner(small_config(tmp_path / "a")):
        pass  # writes a checkpoint of the default MLP at its stop
    config = small_config(tmp_path / "b", impala={"hidden_sizes": (8,)}, init_checkpoint=tmp_path / "a" / "checkpoints")
    with pytest.raises(ValueError, match=r"init checkpoint .*ckpt-0 does not fit this agent \(network"):
        async with running_learner(config):
            pass
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        async with running_learner(small_config(tmp_path / "c", init_checkpoint=tmp_path / "b" / "nothing")):
            pass


async def test_r2d2_replay_is_checkpointed_and_restored_when_asked(running_learner, tmp_path) -> None:
    import dataclasses
    import json

    from aioseed.presets import preset

    r2d2 = dataclasses.replace(preset("r2d2-cartpole").learner.r2d2, checkpoint_replay=True)
    config = small_config(tmp_path, agent="r2d2", r2d2=r2d2, metrics_every_s=0.1)
    async with running_learner(config) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=8, envs_per_message=8))
        task = asyncio.create_task(actor.run())
        await until(lambda: learner.train_steps >= 5, "5 updates", 3000)
        task.cancel()
    saved = json.loads((tmp_path / "checkpoints" / "replay" / "meta.json").read_text())
    assert saved["size"] >= r2d2.min_replay_size  # training had started

    async with running_learner(config) as restarted:  # no actors: nothing new is inserted
        await until(lambda: "replay/size" in restarted.metrics(), "a snapshot")
        metrics = restarted.metrics()
        assert (metrics["replay/size"], metrics["replay/inserted"]) == (saved["size"], saved["inserted"])


async def test_sac_replay_is_checkpointed_with_the_critics_and_temperature_and_restored(running_learner, tmp_path) -> None:
    import json

    import numpy as np

    from aioseed.algos.sac.config import SacConfig

    sac = SacConfig(hidden_sizes=(16,), min_replay_size=64, replay_ratio=16.0, checkpoint_replay=True)
    config = small_config(tmp_path, env="Pendulum-v1", agent="sac", sac=sac, metrics_every_s=0.1,
                          training={"unroll_length": 1, "batch_size": 16})
    async with running_learner(config) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", env="Pendulum-v1", num_envs=4, envs_per_message=4))
        task = asyncio.create_task(actor.run())
        await until(lambda: learner.train_steps >= 5, "5 SAC updates", 3000)
        task.cancel()
    # As the final checkpoint wrote them, once the learner had stopped.
    alpha, weights = learner.agent.alpha, [w.numpy() for w in learner.agent.target_network.weights]
    saved = json.loads((tmp_path / "checkpoints" / "replay" / "meta.json").read_text())
    assert saved["size"] >= sac.min_replay_size

    async with running_learner(config) as restarted:
        await until(lambda: "replay/size" in restarted.metrics(), "a snapshot")
        assert restarted.metrics()["replay/size"] == saved["size"]
        assert restarted.agent.alpha == alpha  # the temperature and the target critics came back too
        for mine, theirs in zip(restarted.agent.target_network.weights, weights, strict=True):
            np.testing.assert_array_equal(mine.numpy(), theirs)


async def test_a_restored_sac_replay_keeps_acting_within_the_replay_ratio(running_learner, tmp_path) -> None:
    """Replay pacing lets acting insert the replay's minimum, then one unroll per train batch here (16 of 16 at
    a ratio of 16), plus one ahead. A restart that restores the replay carries that count on; before, acting
    got the minimum again and ran 64 unrolls further ahead of the ratio for the rest of the run."""
    from aioseed.algos.sac.config import SacConfig

    sac = SacConfig(hidden_sizes=(16,), min_replay_size=64, replay_ratio=16.0, acting_ahead=1, checkpoint_replay=True)
    config = small_config(tmp_path, env="Pendulum-v1", agent="sac", sac=sac, metrics_every_s=0.1,
                          training={"unroll_length": 1, "batch_size": 16, "acting": "replay"})
    start = sac.min_replay_size + 1 + sac.acting_ahead  # the pacing's allowance before the first update

    def ahead(metrics: dict[str, float]) -> float:
        """Unrolls inserted beyond what the train batches sampled so far allow (at most ``start`` plus one
        message's rows less one, the overshoot of the batch that used the allowance up)."""
        return metrics["replay/inserted"] - metrics["replay/sampled"] / sac.replay_ratio

    for _ in range(2):  # the second run restores the first one's replay
        async with running_learner(config) as learner:
            await until(lambda: "replay/sampled" in learner.metrics(), "a snapshot")
            sampled = learner.metrics()["replay/sampled"]
            actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", env="Pendulum-v1", num_envs=4, envs_per_message=4))
            task = asyncio.create_task(actor.run())
            await until(lambda: learner.metrics()["replay/sampled"] >= sampled + 40 * 16, "40 train batches", 3000)
            assert ahead(learner.metrics()) <= start + 3
            task.cancel()


def test_a_checkpoint_that_does_not_fit_leaves_every_weight_as_it_was(tmp_path) -> None:
    """TensorFlow assigns the variables that fit before it meets one that does not: a refused restore puts them
    back, so serve --watch goes on serving the weights it had, not a mix of two runs'."""
    import tensorflow as tf

    from aioseed.errors import InvalidInput
    from aioseed.server.training.checkpoint import Checkpointer
    from aioseed.server.training.trainer import Progress

    def network(actions: int) -> tf.keras.Model:  # the same torso, heads of another size
        model = tf.keras.Sequential([tf.keras.layers.Dense(8), tf.keras.layers.Dense(actions)])
        model(np.zeros((1, 4), np.float32))
        return model

    path = Checkpointer(tmp_path, {"network": network(3)}).save(Progress(train_steps=7, frames=70))
    served = network(2)
    before = [w.numpy() for w in served.weights]
    with pytest.raises(InvalidInput, match="does not fit this learner"):
        Checkpointer(tmp_path, {"network": served}).restore(path)
    for weight, kept in zip(served.weights, before, strict=True):
        np.testing.assert_array_equal(weight.numpy(), kept)  # before: the torso held the other run's weights


def test_the_variables_a_checkpoint_keeps_include_those_a_tf_checkpoint_holds() -> None:
    """Self-play's opponent is kept as a tf.train.Checkpoint: its weights were neither checked for NaN before a save
    nor put back after a refused restore."""
    import tensorflow as tf

    from aioseed.server.training.checkpoint import non_finite_variables, variables_of

    weights = [tf.Variable([1.0, float("nan")]), tf.Variable(2.0)]
    opponent = tf.train.Checkpoint(weights=weights, version=tf.Variable(3, dtype=tf.int64))
    assert {id(v) for v in variables_of(opponent)} >= {id(w) for w in weights}
    assert len(non_finite_variables({"opponent": opponent})) == 1
