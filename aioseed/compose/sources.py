"""Where the trainer's batches come from: each unroll once from the bounded queue, or a replay (its settings
from the algorithm's record), and how far acting may run ahead of training."""

from __future__ import annotations

import asyncio

from aioseed.algos.agent import Agent
from aioseed.algos.builder import ReplaySettings
from aioseed.algos.registry import algorithm
from aioseed.compose.config import LearnerConfig
from aioseed.server.trajectories.pacing import Pacing
from aioseed.server.trajectories.replay import Replay
from aioseed.server.trajectories.replay_feed import ReplayFeed
from aioseed.server.trajectories.source import Source, UnrollQueue
from aioseed.types import Unroll


def build_source(config: LearnerConfig, agent: Agent, unrolls: asyncio.Queue[Unroll], running: asyncio.Event | None = None) -> Source:
    """The agent decides: prioritized replay when it ``uses_replay``, else each unroll once, in order. ``running``:
    cleared while training is paused (a replay then stops inserting)."""
    per_unroll = agent.state_columns().keys()
    if not agent.uses_replay:
        return UnrollQueue(unrolls, config.training.batch_size, per_unroll)
    replay = replay_settings(config)
    # With learner-side stacking the stored stacks are the stacker's: each frame is kept once.
    stacked = "observation" if config.learner_frame_stack > 1 else None
    return ReplayFeed(
        replay=Replay(replay.capacity, replay.priority_exponent, replay.importance_exponent, seed=config.seed, stacked=stacked),
        unrolls=unrolls, batch_size=config.training.batch_size, min_size=replay.min_size, replay_ratio=replay.ratio,
        per_unroll=per_unroll, running=running, prioritize=getattr(agent, "initial_priorities", None),
    )


def replay_settings(config: LearnerConfig) -> ReplaySettings:
    """The replay of the agent that trains from one (its size, sampling, ratio and checkpointing)."""
    trains = algorithm(config.agent)
    if trains.replay is None:
        raise ValueError(f"--agent {config.agent} trains each unroll once, from no replay")
    return trains.replay(trains.settings(config))


def pacing_for(config: LearnerConfig) -> Pacing:
    """How far acting may run ahead of training. Replay mode (SAC, R2D2) credits batch_size / replay_ratio unrolls
    per train batch after the replay's minimum size and ``acting_ahead``: an agent that trains from a replay gets
    that pacing whatever mode it starts in, so that acting may switch to it live."""
    training = config.training
    credit = start = None
    if algorithm(config.agent).replay is not None:
        replay = replay_settings(config)
        credit = training.batch_size / replay.ratio
        start = replay.min_size + credit + replay.acting_ahead
    return Pacing(training.acting, training.batch_size, credit=credit, start=start, lag_bound=training.lag_bound)
