"""The learner's live settings (``aioseed.server.training.live_settings``), wired to the agent, the replay and the pacing."""

from __future__ import annotations

from typing import Any

from aioseed.algos.agent import Agent
from aioseed.algos.registry import algorithm
from aioseed.compose.config import LearnerConfig
from aioseed.server.reporting.stats import Stats
from aioseed.server.training.live_settings import RECORD, LiveSettings, SettingsRecord
from aioseed.server.training.trainer import Trainer
from aioseed.server.trajectories.pacing import Pacing
from aioseed.server.trajectories.replay_feed import ReplayFeed
from aioseed.server.trajectories.source import Source


def live_settings(config: LearnerConfig, agent: Agent, trainer: Trainer, source: Source, pacing: Pacing, stats: Stats) -> LiveSettings:
    """The algorithm's live settings: its agent takes a change between train steps; a new replay ratio then reaches
    the replay (what sampling may take per insert) and, in replay mode, acting's credit per train batch."""
    trains = algorithm(config.agent)
    training = config.training

    def replay_ratio(settings: Any) -> None:
        if trains.replay is None or not isinstance(source, ReplayFeed):
            return
        ratio = trains.replay(settings).ratio
        if ratio != source.replay_ratio:
            source.set_replay_ratio(ratio)
            if pacing.mode == "replay":
                pacing.set_credit(training.batch_size / ratio)

    return LiveSettings(
        trains=trains,
        settings=trains.settings(config),
        apply=lambda settings: agent.change_settings(settings),  # never called without live settings (a plug-in's)
        between_steps=trainer.run_between_steps,
        progress=lambda: (stats.frames, trainer.version),
        record=None if config.logdir is None else SettingsRecord(config.logdir / RECORD),
        after=replay_ratio,
        batch=(training.batch_size, training.unroll_length),
    )
