"""The learner's live settings (``aioseed.server.training.live_settings``), wired to the agent, the replay and the pacing."""

from __future__ import annotations

import dataclasses
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


def with_settings(config: Any, agent: str, settings: Any) -> Any:
    """``config`` (a ``LearnerConfig``, or an ``aioseed run`` config holding one as ``learner``) with ``settings`` as
    its algorithm's section."""
    section = algorithm(agent).section
    if section is None:
        return config
    if hasattr(config, "learner"):
        return dataclasses.replace(config, learner=dataclasses.replace(config.learner, **{section: settings}))
    return dataclasses.replace(config, **{section: settings})


def changes_note(entries: list[dict[str, Any]]) -> str:
    """config.toml's header lines for the settings a resumed run took from its record."""
    lines = [f"  {e['setting']}: {e['old']} -> {e['new']} at train step {e['train_step']} ({e['who']})" for e in entries]
    return "Live changes (settings/changes.jsonl) up to the checkpoint this run resumed from, included above:\n" + "\n".join(lines)


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

    live = LiveSettings(
        trains=trains,
        settings=trains.settings(config),
        apply=lambda settings: agent.change_settings(settings),  # never called without live settings (a plug-in's)
        between_steps=trainer.run_between_steps,
        progress=lambda: (stats.frames, trainer.version),
        record=None if config.logdir is None else SettingsRecord(config.logdir / RECORD),
        after=replay_ratio,
        batch=(training.batch_size, training.unroll_length),
    )
    if config.settings_schedule is not None:
        live.load_schedule(config.settings_schedule)
    return live
