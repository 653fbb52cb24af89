"""Training settings changed while a run trains: checked, applied between train steps, and put on the record.

``LiveSettings`` holds the settings in effect, by section of the learner config: the algorithm's that trains
(``Algorithm.live`` names the fields that may change) and training's (the acting mode and its lag bound,
``acting_settings``). A change is checked whole before anything moves: each value against its setting's type and
range (``InvalidSetting``: 400), then each section against its config's own rules, then against what cannot
change in a running learner (``Algorithm.live_refusal``: ``CommandRefused``, 409). It is then applied in the
train thread between two train steps, so the next step uses it, and each setting that changed is appended
to ``LOGDIR/settings/changes.jsonl`` (``aioseed.server.training.settings_record``) with the time, frames, train
step, who and old -> new. Changes run one at a time, each from the settings the one before left: of two consoles,
the last write wins and both are recorded. The agent's learning rate is recorded the same way
(``change_learning_rate``), and a resume takes the record's last one too.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import pathlib
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np
import structlog

from aioseed.algos.builder import Algorithm
from aioseed.algos.live import LiveSetting, in_section, short
from aioseed.algos.registry import ALGORITHMS
from aioseed.control import CommandFailed, CommandRefused, InvalidSetting
from aioseed.server.training.settings_record import LEARNING_RATE, SettingsRecord, read_schedule

log = structlog.get_logger()

HISTORY = 200
"""Changes ``LiveSettings.history`` keeps for the console."""


class LearningRate(Protocol):
    """The agent's base learning rate (``aioseed.algos.agent.Agent``'s), which its checkpoints keep."""

    @property
    def learning_rate(self) -> float: ...

    def set_learning_rate(self, value: float) -> None: ...


def acting_settings(modes: tuple[str, ...]) -> tuple[LiveSetting, ...]:
    """Training's live settings where acting can take more than one of ``modes``: the mode, and bounded's lag bound."""
    if len(modes) < 2:
        return ()
    switch = "at the next inference batch (an on-policy mode first trains the unrolls acting has queued)"
    settings = [LiveSetting("acting", "choice", choices=modes, takes_effect=switch)]
    if "bounded" in modes:
        settings.append(LiveSetting("lag_bound", "int", 1, 64, takes_effect="at the next inference batch, in bounded mode"))
    return in_section("training", tuple(settings))


def _entry(frames: int, step: int, who: str, setting: str, old: Any, new: Any) -> dict[str, Any]:
    """One line of the record (``aioseed.server.training.settings_record``), made now."""
    return {"time": time.time(), "frames": frames, "train_step": step, "who": who, "setting": setting, "old": old, "new": new}


class LiveSettings:
    """Verbs: ``check`` a change, ``change`` (check, apply between train steps, record), ``values``, ``catalog``,
    ``metrics``."""

    def __init__(
        self,
        trains: Algorithm,
        live: tuple[LiveSetting, ...],
        sections: dict[str, Any],
        apply: Callable[[Any], None],
        between_steps: Callable[[Callable[[], Any]], Any],
        progress: Callable[[], tuple[int, int]],
        record: SettingsRecord | None = None,
        after: Callable[[dict[str, Any]], None] | None = None,
        refusal: Callable[[dict[str, Any], dict[str, Any]], str | None] | None = None,
        replicas: int = 1,
        rate: LearningRate | None = None,
    ) -> None:
        """``live``: the settings that may change (each names its section); ``sections``: the learner config's sections
        they belong to, as the run started (``training``'s included); ``apply(settings)`` hands the algorithm's new
        settings to the agent (in the train thread); ``between_steps(fn)`` awaits ``fn`` run there after the step in
        progress; ``progress()``: (frames, train step) now; ``after(sections)``: then, on the event loop, to the
        replay and pacing; ``refusal(sections, proposed)``: why the running learner cannot go from one to the other
        now (None: it can), beside the algorithm's own ``live_refusal``; ``replicas``: the training devices each
        minibatch splits across; ``rate``: the agent's learning rate (``change_learning_rate``)."""
        self.trains = trains
        self.sections = sections
        self._live = {setting.name: setting for setting in live}
        self._apply = apply
        self._between_steps = between_steps
        self._progress = progress
        self.record = record
        self._after = after
        self._refusal = refusal
        self._replicas = replicas
        self._rate = rate
        self.history: list[dict[str, Any]] = []
        """The latest changes (at most ``HISTORY``), as recorded: the console marks them on its charts."""
        self.scheduled: list[dict[str, Any]] = []
        """Changes to apply at their frames (``load_schedule``), from ``scheduled_from``."""
        self.scheduled_from = ""
        self.resumed_frames: int | None = None
        """The frames of the checkpoint this run resumed from (``resume``); None for a run that started afresh."""
        self.on_resumed: Callable[[dict[str, Any], list[dict[str, Any]]], None] | None = None
        """Told the sections a resumed run took from its record, and those entries (config.toml is rewritten)."""

    def load_schedule(self, path: pathlib.Path) -> None:
        """The changes ``follow`` applies: ``read_schedule``'s."""
        self.scheduled, self.scheduled_from = read_schedule(path, tuple(self._live.values()), self.trains.name), str(path)

    async def follow(self, frames: Callable[[], int], every_s: float = 0.2) -> None:
        """Applies the loaded schedule in order of its frames, each group once the run has trained that many. A resumed
        run skips the groups at or before its checkpoint's frames: it applied them then, and its record restored
        them (re-applied, they would undo a change made after them, from the console)."""
        ordered = sorted(self.scheduled, key=lambda entry: entry["frames"])
        if self.resumed_frames is not None:
            skipped = [entry for entry in ordered if entry["frames"] <= self.resumed_frames]
            if skipped:
                log.info("settings_schedule_skipped", changes=len(skipped), up_to_frames=self.resumed_frames, hint="applied before the checkpoint")
            ordered = ordered[len(skipped):]
        for at, group in itertools.groupby(ordered, key=lambda entry: entry["frames"]):
            while frames() < at:
                await asyncio.sleep(every_s)
            changes = {entry["setting"]: entry["new"] for entry in group}  # in order: a later line for a setting wins
            rate = changes.pop(LEARNING_RATE.name, None)
            who = f"schedule {self.scheduled_from}"
            # The settings, then the rate: each on its own (a refusal of one leaves the other), between train steps.
            if changes:
                try:
                    await self.change(changes, who)
                except (InvalidSetting, CommandRefused, CommandFailed) as exc:  # e.g. a clip the run never set: the run goes on
                    log.error("settings_schedule_refused", frames=at, changes=changes, error=str(exc))
            if rate is not None:
                try:
                    await self.change_learning_rate(LEARNING_RATE.parse(rate), who)
                except (InvalidSetting, CommandRefused, CommandFailed) as exc:
                    log.error("settings_schedule_refused", frames=at, learning_rate=rate, error=str(exc))

    async def resume(self, train_steps: int, frames: int) -> list[dict[str, Any]]:
        """A restored run takes the changes its record made up to the checkpoint's ``train_steps`` (those made after it
        are moved out of the record: ``SettingsRecord.keep_until``); returns the live settings' among them.
        ``frames``: the checkpoint's. The learning rate is the record's last too: the checkpoint holds the same one,
        unless the rate changed after it was written at the same train step (paused, or waiting for data)."""
        self.resumed_frames = frames
        if self.record is None:
            return []
        kept = await self._keep_until(train_steps)
        rates = [entry["new"] for entry in kept if entry.get("setting") == LEARNING_RATE.name]
        if rates and self._rate is not None:
            rate, last = self._rate, LEARNING_RATE.parse(rates[-1])
            await self._between_steps(lambda: rate.set_learning_rate(last))
        entries = [entry for entry in kept if entry.get("setting") in self._live]
        if not entries:
            return []
        sections = self.sections
        for entry in entries:
            sections = self._replaced(sections, {entry["setting"]: entry["new"]})
        await self._between_steps(lambda: self._apply_sections(self.sections, sections))
        self.sections = sections
        if self._after is not None:
            self._after(sections)
        log.info("settings_resumed", changes=len(entries), train_steps=train_steps, **self.values())
        if self.on_resumed is not None:
            await asyncio.to_thread(self.on_resumed, sections, entries)
        return entries

    async def start_afresh(self) -> None:
        """A run that starts without a checkpoint follows none of the changes in its logdir's record (a run killed
        before its first checkpoint made them): they are moved out, so that a later resume does not apply them."""
        if self.record is not None and self.record.path.exists():
            await self._keep_until(-1)

    async def _keep_until(self, train_steps: int) -> list[dict[str, Any]]:
        assert self.record is not None
        try:
            return await asyncio.to_thread(self.record.keep_until, train_steps)
        except (OSError, ValueError) as exc:
            raise InvalidSetting("settings_record", f"cannot read the settings changed live: {exc}") from None

    def catalog(self) -> list[dict[str, Any]]:
        """Each live setting: name, section, the values it takes and when a change takes effect."""
        return [setting.as_json() for setting in self._live.values()]

    def values(self) -> dict[str, Any]:
        """The live settings in effect."""
        return {name: getattr(self.sections[setting.section], name) for name, setting in self._live.items()}

    def metrics(self) -> dict[str, float]:
        """The numeric ones as ``settings/NAME`` gauges (TensorBoard keeps their timeline); a choice as the index of
        its value among its choices (the acting mode: 0 async, then the modes the catalog lists)."""
        gauges = {}
        for name, value in self.values().items():
            if self._live[name].kind == "choice":
                gauges[f"settings/{name}"] = float(self._live[name].choices.index(value))
            elif isinstance(value, int | float) and not isinstance(value, bool):
                gauges[f"settings/{name}"] = float(value)
        return gauges

    def check(self, changes: Mapping[str, Any], sections: dict[str, Any] | None = None) -> dict[str, Any]:
        """The sections ``changes`` would make of ``sections`` (default: those in effect); raises InvalidSetting
        (a name or value the run does not take) or CommandRefused (a value it cannot take while running)."""
        if not changes:
            raise InvalidSetting("", f"name at least one setting; {self.trains.name}'s live settings: {', '.join(self._live) or 'none'}")
        parsed = {name: self._setting(name).parse(value) for name, value in changes.items()}
        current = self.sections if sections is None else sections
        proposed = self._replaced(current, parsed)
        reason = None if self._refusal is None else self._refusal(current, proposed)
        if reason is not None:
            raise CommandRefused(reason)
        algorithm = self.trains.section
        if algorithm is None or algorithm not in proposed:
            return proposed
        training = proposed["training"]
        split = self.trains.split(proposed[algorithm], training.batch_size, training.unroll_length)
        if not split.fits(self._replicas):
            raise InvalidSetting(
                "minibatches", f"{split.what} must split into minibatches = {split.minibatches} equal minibatches, each a "
                f"multiple of the {self._replicas} training device(s)",
            )
        reason = self.trains.live_refusal(current[algorithm], proposed[algorithm])
        if reason is not None:
            raise CommandRefused(reason)
        return proposed

    def _replaced(self, sections: dict[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
        """``sections`` with ``values`` (parsed) in their settings' sections; InvalidSetting where a section's own rules
        refuse them."""
        replaced = dict(sections)
        for section, names in itertools.groupby(sorted(values, key=lambda name: self._live[name].section), key=lambda name: self._live[name].section):
            fields = {name: values[name] for name in names}
            try:
                replaced[section] = dataclasses.replace(sections[section], **fields)
            except ValueError as exc:  # the config's own rules across its fields
                raise InvalidSetting(next(iter(fields)), str(exc)) from None
        return replaced

    def _apply_sections(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """In the train thread: the agent takes its algorithm's new settings (acting's reach the pacing in ``after``)."""
        algorithm = self.trains.section
        if algorithm is not None and old.get(algorithm) != new.get(algorithm):
            self._apply(new[algorithm])

    def _setting(self, name: str) -> LiveSetting:
        if name in self._live:
            return self._live[name]
        owners = [entry.name for entry in ALGORITHMS.values() if any(s.name == name for s in entry.live)]
        whose = f" (a setting of {' and '.join(owners)})" if owners else ""
        raise InvalidSetting(
            name, f"{short(name)} is not a live setting of {self.trains.name}{whose}; its live settings: {', '.join(self._live) or 'none'}"
        )

    async def change(self, changes: Mapping[str, Any], who: str) -> dict[str, Any]:
        """Checks ``changes``, applies them between train steps and records each setting that changed. Returns the
        train step from which they apply and the settings in effect."""
        self.check(changes)  # refused here, before waiting for the train thread

        def between_steps() -> dict[str, Any]:
            old = self.sections
            new = self.check(changes, old)  # again: an earlier change may have landed meanwhile
            frames, step = self._progress()
            entries = []
            for name in changes:
                section = self._live[name].section
                before, after = getattr(old[section], name), getattr(new[section], name)
                if before != after:
                    entries.append(_entry(frames, step, who, name, before, after))
            self._put_on_record(entries)  # first: a change the record lacks would be lost on resume
            self._apply_sections(old, new)
            self.sections = new
            self._remember(entries)
            return {"train_step": step, "changed": [entry["setting"] for entry in entries]}

        applied = await self._between_steps(between_steps)
        if self._after is not None:
            self._after(self.sections)
        return {**applied, "values": self.values()}

    async def change_learning_rate(self, value: float, who: str) -> None:
        """Sets the agent's learning rate between train steps, recorded first and marked for the console as the
        settings' changes are (a rate the float32 variable already holds is no change). Raises CommandFailed (the
        record cannot be written: the rate stays) or CommandRefused (no agent's rate here)."""
        rate = self._rate
        if rate is None:
            raise CommandRefused("this learner has no learning rate to change")

        def between_steps() -> None:
            old, new = float(np.float32(rate.learning_rate)), float(np.float32(value))
            if old != new:
                frames, step = self._progress()
                entries = [_entry(frames, step, who, LEARNING_RATE.name, old, new)]
                self._put_on_record(entries)
                self._remember(entries)
            rate.set_learning_rate(value)

        await self._between_steps(between_steps)

    def _put_on_record(self, entries: list[dict[str, Any]]) -> None:
        if entries and self.record is not None:
            try:
                self.record.append(entries)
            except OSError as exc:
                raise CommandFailed(f"the change was not applied: its record {self.record.path} cannot be written: {exc}") from None

    def _remember(self, entries: list[dict[str, Any]]) -> None:
        self.history = [*self.history, *entries][-HISTORY:]
        for entry in entries:
            log.info("setting_changed", **{name: entry[name] for name in ("setting", "old", "new", "train_step", "who")})
