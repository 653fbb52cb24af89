"""A run's record of the settings changed live (``LOGDIR/settings/changes.jsonl``), and the schedule that replays one.

Each line is one change: ``time``, ``frames``, ``train_step``, ``who``, ``setting``, ``old`` and ``new``. The
record holds the live training settings' changes (``aioseed.server.training.live_settings``) and the console's
learning rate (``LEARNING_RATE``), which lives in the agent and its checkpoints rather than in the config.
"""

from __future__ import annotations

import json
import pathlib
import threading
from typing import Any

import structlog

from aioseed.algos.live import LiveSetting, short
from aioseed.control import InvalidSetting

log = structlog.get_logger()

RECORD = pathlib.Path("settings") / "changes.jsonl"
"""Where a run's changes are kept, under its logdir."""
LEARNING_RATE = LiveSetting("learning_rate", "float", 0.0, 1.0, low_open=True)
"""The agent's base learning rate, as the console and a schedule may set it (checkpoints keep it)."""


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
        """Every change recorded so far, oldest first (none without a file). A last line cut short (the process was
        killed while it appended) is left out, with a warning; any other line that is not a JSON object is a
        ValueError naming it."""
        if not self.path.exists():
            return []
        text = self.path.read_text()
        lines = text.splitlines()
        entries = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError as exc:
                if number == len(lines) and not text.endswith("\n"):
                    log.warning("settings_record_torn_line", path=str(self.path), line=number, hint="left out: the run was killed while it wrote it")
                    continue
                raise ValueError(f"{self.path} line {number} is not JSON: {exc}") from None
            if not isinstance(entry, dict):
                raise ValueError(f"{self.path} line {number} is not a JSON object")
            entries.append(entry)
        return entries

    def keep_until(self, train_steps: int) -> list[dict[str, Any]]:
        """Keeps the changes made up to ``train_steps`` (a resumed checkpoint's), in order of their train steps, and
        moves the rest to changes.discarded.jsonl: a run killed after its checkpoint made them on a timeline the
        resumed run does not follow, and a later resume must not apply them. Returns the changes kept."""
        with self._lock:
            entries = self.entries()
            kept = sorted((e for e in entries if _train_step(e) <= train_steps), key=_train_step)
            discarded = [e for e in entries if _train_step(e) > train_steps]
            if discarded:
                with self.path.with_name("changes.discarded.jsonl").open("a") as f:
                    f.writelines(json.dumps(entry) + "\n" for entry in discarded)
                log.info("settings_record_discarded", changes=len(discarded), after_train_step=train_steps)
            if discarded or kept != entries:
                partial = self.path.with_name(self.path.name + ".partial")
                partial.write_text("".join(json.dumps(entry) + "\n" for entry in kept))
                partial.replace(self.path)
            return kept


def _train_step(entry: dict[str, Any]) -> int:
    step = entry.get("train_step")
    if not isinstance(step, int) or isinstance(step, bool):
        raise ValueError(f"a settings record entry without an integer train_step: {entry}")
    return step


def read_schedule(path: pathlib.Path, live: tuple[LiveSetting, ...], trains: str) -> list[dict[str, Any]]:
    """The changes of a ``changes.jsonl`` at ``path``, each checked against the ``live`` settings of a learner training
    ``trains`` and ``LEARNING_RATE``: InvalidSetting names the first line the run cannot apply."""
    if not path.is_file():
        raise InvalidSetting("settings_schedule", f"the settings schedule {path} is not a file")
    try:
        entries = SettingsRecord(path).entries()
    except (OSError, ValueError) as exc:
        raise InvalidSetting("settings_schedule", f"cannot read the settings schedule {path}: {exc}") from None
    settings = {setting.name: setting for setting in (*live, LEARNING_RATE)}
    for number, entry in enumerate(entries, 1):
        missing = {"frames", "setting", "new"} - set(entry) if isinstance(entry, dict) else {"an object"}
        if missing:
            raise InvalidSetting("settings_schedule", f"{path} line {number} lacks {', '.join(sorted(missing))}")
        frames = entry["frames"]
        if not isinstance(frames, int | float) or isinstance(frames, bool) or not 0 <= frames < float("inf"):
            raise InvalidSetting("settings_schedule", f"{path} line {number}: frames must be a number >= 0, got {frames!r}")
        if not isinstance(entry["setting"], str):
            raise InvalidSetting("settings_schedule", f"{path} line {number}: setting must be a name, got {entry['setting']!r}")
        if entry["setting"] not in settings:
            raise InvalidSetting(
                "settings_schedule", f"{path} line {number}: {short(entry['setting'])} is not a live setting of {trains}"
            )
        try:
            settings[entry["setting"]].parse(entry["new"])
        except InvalidSetting as exc:
            raise InvalidSetting("settings_schedule", f"{path} line {number}: {exc}") from None
    return entries
