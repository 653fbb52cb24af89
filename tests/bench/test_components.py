"""``aioseed.bench.atari.components`` costs any algorithm's parts, replay-trained ones included."""

from __future__ import annotations

import dataclasses

import numpy as np

from aioseed.algos.replicas import Replicas
from aioseed.bench.atari import components, synthetic_batch
from aioseed.compose.learner import build_agent, learner_specs
from aioseed.presets import preset


def r2d2_cartpole(envs: int = 4):
    run = preset("r2d2-cartpole")
    return dataclasses.replace(run, num_actors=1, envs_per_actor=envs)


def test_a_replay_batch_has_the_burn_in_the_weights_and_one_state_per_sequence() -> None:
    config = r2d2_cartpole().learner
    wire, spec = learner_specs(config)
    agent = build_agent(config, spec, Replicas())
    t, b = config.training.unroll_length, config.training.batch_size
    batch = synthetic_batch(agent, wire, t, b, np.random.default_rng(0))
    assert batch["observation"].shape == (config.r2d2.burn_in + t + 1, b, *spec.observation_shape)
    assert batch["core_h"].shape == (b, config.r2d2.lstm_size) and batch["weights"].shape == (b,)
    assert batch["action"].max() < spec.num_actions
    metrics = agent.train_step(batch)  # the agent takes it as the learner's own batch
    assert metrics["priorities"].shape == (b,) and np.isfinite(metrics["losses/total"])


def test_components_count_a_replay_step_as_often_as_it_is_sampled() -> None:
    run = r2d2_cartpole()
    parts = components(run, mean_batch=4, seconds=0.05)
    assert parts["env_core_ms_per_step"] > 0 and parts["inference_core_ms_per_step"] > 0
    assert parts["train_core_ms_per_step"] > 0 and parts["frames_per_step"] == 1


def test_inference_is_timed_at_the_actors_envs_where_the_run_saw_no_inference_batch() -> None:
    """IMPALA mode's learner infers nothing (its holds' mean batch is NaN); its actors infer their own envs."""
    run = r2d2_cartpole(envs=6)
    assert components(run, mean_batch=float("nan"), seconds=0.05)["inference_batch"] == 6
    assert components(run, mean_batch=2.6, seconds=0.05)["inference_batch"] == 3
