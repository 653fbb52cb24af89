"""Named starting points for ``aioseed run --preset NAME``; any other flag overrides the preset's value."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Callable

from aioseed.algos.impala.config import ImpalaConfig
from aioseed.envs.football import FootballConfig
from aioseed.envs import CATCH_ID
from aioseed.launch import RunConfig
from aioseed.server.config import StopConfig
from aioseed.server.training import TrainingConfig


def atari() -> RunConfig:
    """V-trace targets with PPO-style sample reuse and the Nature CNN on ``ALE/Pong-v5`` (v5 defaults:
    sticky actions 0.25); any ALE/ id with ``--learner.env``. Actors send single frames and the learner
    stacks four; 2 x 16 envs, K = 16.

    The best measured Pong settings (docs/results/README.md, run C): CleanRL's PPO recipe (Adam 2.5e-4
    decaying over 40M frames, 4 epochs x 4 minibatches, clip 0.1, entropy 0.01, normalized advantages,
    gradient norm 0.5) on 32 x 32-step unrolls, with V-trace (lambda 0.95) correcting for the policy lag
    of the asynchronous actors. Pong left -20.5 after 2.2M frames here and reached -8.3 after 9M
    (187 min); one pass of V-trace stayed flat for 6.8M. Neither reaches +18 on 2 CPU cores in an hour."""
    base = RunConfig()
    learner = dataclasses.replace(
        base.learner,
        env="ALE/Pong-v5",
        logdir=pathlib.Path("logs/atari"),
        stop=StopConfig(),
        checkpoint_every_s=300.0,
        learner_frame_stack=4,
        impala=ImpalaConfig(
            network="nature_cnn",
            reward_clipping="abs",
            learning_rate=2.5e-4,
            adam_epsilon=1e-5,
            lr_schedule="linear",
            lr_frames=40_000_000,
            max_grad_norm=0.5,
            entropy_cost=0.01,
            normalize_advantages=True,
            targets="vtrace",
            lambda_=0.95,
            epochs=4,
            minibatches=4,
            ppo_clip=0.1,
        ),
        # A queue of one unroll: the lag stays ~2.5 batches (41 updates); with 32 it was 60.
        training=TrainingConfig(unroll_length=32, batch_size=32, queue_capacity=1),
    )
    return dataclasses.replace(base, learner=learner, num_actors=2, envs_per_actor=16, envs_per_message=16)


def catch() -> RunConfig:
    """The Nature CNN on ``aioseed/Catch-v0`` (bsuite's Catch drawn as 84 x 84 pixels) until the mean
    return over 100 episodes reaches 0.9: the pixel path's regression test, about a minute here."""
    base = RunConfig()
    learner = dataclasses.replace(
        base.learner,
        env=CATCH_ID,
        logdir=pathlib.Path("logs/catch"),
        stop=StopConfig(at_return=0.9),
        # Normalized advantages collapsed the policy in 2 of 5 seeds (noise in the sparse rewards' advantages
        # scaled up to std 1); without, 8 of 8 seeds reached 0.9 in 14-43K frames. A queue of one batch keeps
        # the policy lag near one update (with 64 it was ~12).
        impala=ImpalaConfig(network="nature_cnn", learning_rate=1e-3, entropy_cost=0.01),
        training=TrainingConfig(unroll_length=10, batch_size=8, queue_capacity=8),
    )
    return dataclasses.replace(base, learner=learner, num_actors=2, envs_per_actor=16, envs_per_message=16)


def football_academy() -> RunConfig:
    """V-trace on Google Research Football's academy_empty_goal_close from the simple115v2 state with an
    MLP torso, scoring reward, SEED's Adam learning rate; stops once 90% of the last 100 episodes score.
    On 2 CPU cores it gets there in about a minute."""
    base = RunConfig()
    learner = dataclasses.replace(
        base.learner,
        env="football:academy_empty_goal_close",
        logdir=pathlib.Path("logs/football-academy"),
        football=FootballConfig(representation="simple115v2", rewards="scoring"),
        impala=ImpalaConfig(
            learning_rate=0.00048, discount=0.993, entropy_cost=0.003, hidden_sizes=(256, 256), activation="relu"
        ),
        training=TrainingConfig(unroll_length=32, batch_size=16),
        stop=StopConfig(at_return=0.9),
    )
    return dataclasses.replace(base, learner=learner, num_actors=2, envs_per_actor=8, envs_per_message=8)


def football_academy_smm() -> RunConfig:
    """``football_academy`` as SEED runs Football: the stacked Super Mini Map (uint8[72, 96, 16]) and
    SEED's Football ResNet. About 3.4x fewer frames/s than the MLP on 2 CPU cores."""
    run = football_academy()
    learner = dataclasses.replace(
        run.learner,
        logdir=pathlib.Path("logs/football-academy-smm"),
        football=FootballConfig(representation="extracted", stacked=True, rewards="scoring"),
        impala=dataclasses.replace(run.learner.impala, network="football_resnet"),
    )
    return dataclasses.replace(run, learner=learner)


PRESETS: dict[str, Callable[[], RunConfig]] = {
    "none": RunConfig,
    "atari": atari,
    "catch": catch,
    "football-academy": football_academy,
    "football-academy-smm": football_academy_smm,
}
"""The names ``RunConfig.preset`` accepts."""


def preset(name: str) -> RunConfig:
    """The ``RunConfig`` a preset names (``none``: the defaults, CartPole)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return dataclasses.replace(PRESETS[name](), preset=name)
