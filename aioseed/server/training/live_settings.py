"""Training settings changed while a run trains: checked, applied between train steps, and put on the record.

``LiveSettings`` holds the settings in effect of the algorithm that trains (``Algorithm.live`` names the fields
that may change). A change is checked whole before anything moves: each value against its setting's type and
range (``InvalidSetting``: 400), then the settings as a whole against their config's own rules, then against
what cannot change in a running learner (``Algorithm.live_refusal``: ``CommandRefused``, 409). It is then applied
in the train thread between two train steps, so the next step uses it, and each setting that changed is appended
to ``LOGDIR/settings/changes.jsonl`` (``SettingsRecord``) with the time, frames, train step, who and old -> new.
Changes run one at a time, each from the settings the one before left: of two consoles, the last write wins
and both are recorded.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from aioseed.algos.builder import Algorithm
from aioseed.algos.live import LiveSetting, short
from aioseed.algos.registry import ALGORITHMS
from aioseed.control import CommandRefused, InvalidSetting

log = structlog.get_logger()

RECORD = pathlib.Path("settings") / "changes.jsonl"
"""Where a run's changes are kept, under its logdir."""


class SettingsRecord:
    """``changes.jsonl``: one JSON object per setting changed, appended in order (``entries`` reads them back)."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, entries: list[dict[str, Any]]) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.writelines(json.dumps(entry) + "\n" for entry in entries)

    def entries(self) -> list[dict[str, Any]]:
        """Every change recorded so far, oldest first (none without a file)."""
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]


class LiveSettings:
    """Verbs: ``check`` a change, ``change`` (check, apply between train steps, record), ``values``, ``catalog``,
    ``metrics``."""

    def __init__(
        self,
        trains: Algorithm,
        settings: Any,
        apply: Callable[[Any], None],
        between_steps: Callable[[Callable[[], Any]], Any],
        progress: Callable[[], tuple[int, int]],
        record: SettingsRecord | None = None,
        after: Callable[[Any], None] | None = None,
        batch: tuple[int, int] = (1, 1),
    ) -> None:
        """``settings``: the algorithm's, as the run started; ``apply(settings)`` hands new settings to the agent (in
        the train thread); ``between_steps(fn)`` awaits ``fn`` run there after the step in progress; ``progress()``:
        (frames, train step) now; ``after(settings)``: then, on the event loop, to the replay and pacing; ``batch``:
        (batch size, unroll length) of a train batch, which new minibatches must split evenly."""
        self.trains = trains
        self.settings = settings
        self._live = {setting.name: setting for setting in trains.live}
        self._apply = apply
        self._between_steps = between_steps
        self._progress = progress
        self.record = record
        self._after = after
        self._batch = batch

    def catalog(self) -> list[dict[str, Any]]:
        """Each live setting: name, section, the values it takes and when a change takes effect."""
        return [setting.as_json() for setting in self._live.values()]

    def values(self) -> dict[str, Any]:
        """The live settings in effect."""
        return {name: getattr(self.settings, name) for name in self._live}

    def metrics(self) -> dict[str, float]:
        """The numeric ones as ``settings/NAME`` gauges (TensorBoard keeps their timeline)."""
        return {
            f"settings/{name}": float(value)
            for name, value in self.values().items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        }

    def check(self, changes: Mapping[str, Any], settings: Any | None = None) -> Any:
        """The settings ``changes`` would make of ``settings`` (default: those in effect); raises InvalidSetting
        (a name or value the run does not take) or CommandRefused (a value it cannot take while running)."""
        if not changes:
            raise InvalidSetting("", f"name at least one setting; {self.trains.name}'s live settings: {', '.join(self._live) or 'none'}")
        parsed = {name: self._setting(name).parse(value) for name, value in changes.items()}
        current = self.settings if settings is None else settings
        try:
            proposed = dataclasses.replace(current, **parsed)
        except ValueError as exc:  # the config's own rules across its fields
            raise InvalidSetting(next(iter(parsed)), str(exc)) from None
        split = self.trains.split(proposed, *self._batch)
        if split.rows % split.minibatches:
            raise InvalidSetting("minibatches", f"{split.what} must split into minibatches = {split.minibatches} equal minibatches")
        reason = self.trains.live_refusal(current, proposed)
        if reason is not None:
            raise CommandRefused(reason)
        return proposed

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
            old = self.settings
            new = self.check(changes, old)  # again: an earlier change may have landed meanwhile
            self._apply(new)
            self.settings = new
            frames, step = self._progress()
            entries = [
                {"time": time.time(), "frames": frames, "train_step": step, "who": who, "setting": name,
                 "old": getattr(old, name), "new": getattr(new, name)}
                for name in changes
                if getattr(old, name) != getattr(new, name)
            ]
            if entries and self.record is not None:
                self.record.append(entries)
            for entry in entries:
                log.info("setting_changed", setting=entry["setting"], old=entry["old"], new=entry["new"], train_step=step, who=who)
            return {"train_step": step, "changed": [entry["setting"] for entry in entries]}

        applied = await self._between_steps(between_steps)
        if self._after is not None:
            self._after(self.settings)
        return {**applied, "values": self.values()}
