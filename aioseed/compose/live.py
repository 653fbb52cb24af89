"""The learner's live settings (``aioseed.server.training.live_settings``), wired to the agent, the replay and the pacing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from aioseed.algos.agent import Agent
from aioseed.algos.registry import algorithm
from aioseed.compose.config import LearnerConfig
from aioseed.server.reporting.stats import Stats
from aioseed.server.training.live_settings import LiveSettings
from aioseed.server.training.settings_record import RECORD, SettingsRecord
from aioseed.server.training.trainer import Trainer
from aioseed.server.trajectories.pacing import Pacing
from aioseed.server.trajectories.replay_feed import ReplayFeed
from aioseed.server.trajectories.source import Source


def with_sections(config: Any, sections: dict[str, Any]) -> Any:
    """``config`` (a ``LearnerConfig``, or an ``aioseed run`` config holding one as ``learner``) with ``sections`` (the
    live settings' sections, by field name) in place of its own."""
    if hasattr(config, "learner"):
        return dataclasses.replace(config, learner=dataclasses.replace(config.learner, **sections))
    return dataclasses.replace(config, **sections)


def changes_note(entries: list[dict[str, Any]]) -> str:
    """config.toml's header lines for the settings a resumed run took from its record."""
    lines = [f"  {e['setting']}: {e['old']} -> {e['new']} at train step {e['train_step']} ({e['who']})" for e in entries]
    return "Live changes (settings/changes.jsonl) up to the checkpoint this run resumed from, included above:\n" + "\n".join(lines)


def live_settings(
    config: LearnerConfig, agent: Agent, trainer: Trainer, source: Source, pacing: Pacing, stats: Stats, connected_envs: Callable[[], int],
    replicas: int = 1,
) -> LiveSettings:
    """The learner's live settings: its agent takes the algorithm's between train steps; a new replay ratio then
    reaches the replay (what sampling may take per insert) and replay pacing's credit per train batch; a new
    acting mode or lag bound, the pacing. ``connected_envs()``: the envs acting now (synchronous acting needs a
    train batch's worth); ``replicas``: the training devices."""
    trains = algorithm(config.agent)

    def refusal(sections: dict[str, Any], proposed: dict[str, Any]) -> str | None:
        training, envs = proposed["training"], connected_envs()
        switching = training.acting == "synchronous" and sections["training"].acting != "synchronous"
        if switching and envs < training.batch_size:
            return (
                f"synchronous acting needs at least training.batch_size = {training.batch_size} envs connected (each "
                f"completes one unroll a train batch, then waits for its update); {envs} are: use bounded, or connect more"
            )
        return None

    def after(sections: dict[str, Any]) -> None:
        training = sections["training"]
        if trains.replay is not None and isinstance(source, ReplayFeed):
            ratio = trains.replay(sections[trains.section] if trains.section else trains.settings(config)).ratio
            if ratio != source.replay_ratio:
                source.set_replay_ratio(ratio)
                pacing.set_credit(training.batch_size / ratio)
        if (training.acting, training.lag_bound) != (pacing.mode, pacing.lag_bound):
            pacing.switch(training.acting, training.lag_bound)
            if isinstance(source, ReplayFeed):  # replay pacing counts what the replay already holds
                pacing.resume(source.replay.inserted, source.batches_sampled)

    sections = {"training": config.training}
    if trains.section is not None:
        sections[trains.section] = trains.settings(config)
    live = LiveSettings(
        trains=trains,
        live=config.live_settings,
        sections=sections,
        apply=lambda settings: agent.change_settings(settings),  # never called without live settings (a plug-in's)
        between_steps=trainer.run_between_steps,
        progress=lambda: (stats.frames, trainer.version),
        record=None if config.logdir is None else SettingsRecord(config.logdir / RECORD),
        after=after,
        refusal=refusal,
        replicas=replicas,
        rate=agent,
    )
    if config.settings_schedule is not None:
        live.load_schedule(config.settings_schedule)
    return live
