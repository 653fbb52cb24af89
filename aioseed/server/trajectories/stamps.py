"""Which checkpoint a checkpoint attachment (the replay, the episode window) was saved with.

The checkpoint is written first, then each attachment, so a crash between the two leaves the attachments of the
checkpoint before; a user who rolls the state file back to an older checkpoint leaves them newer. An attachment is
stamped with its checkpoint's counters and loaded beside the checkpoint restored unless it is newer: experience
the restored weights never had would train them, and returns they never earned would reach the curves and a
return stop. An older one is the same run's, a save behind: it loads, with a warning. An attachment saved before
stamps existed loads as it did.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import Protocol

import structlog

log = structlog.get_logger()


class Counters(Protocol):
    """A checkpoint's counters (``aioseed.server.training.trainer.Progress``)."""

    @property
    def train_steps(self) -> int: ...

    @property
    def frames(self) -> int: ...


KEY = "checkpoint"
"""The stamp's key in an attachment's JSON."""


def stamp(progress: Counters) -> dict[str, int]:
    """The stamp of the checkpoint saved at ``progress``."""
    return {"train_steps": progress.train_steps, "frames": progress.frames}


def loadable(saved: Mapping[str, int] | None, restored: Counters | None, path: pathlib.Path) -> bool:
    """Whether the attachment at ``path``, stamped ``saved`` (None: saved before stamps), loads beside the
    checkpoint restored at ``restored`` (None: a caller with no checkpoint, which loads it as it is). A damaged
    stamp raises KeyError, TypeError or ValueError, as a damaged attachment does."""
    if saved is None or restored is None:
        return True
    mine = (restored.train_steps, restored.frames)
    theirs = (int(saved["train_steps"]), int(saved["frames"]))
    if theirs == mine:
        return True
    newer = theirs > mine
    log.warning(
        "attachment_of_another_checkpoint", path=str(path), saved_train_steps=theirs[0], saved_frames=theirs[1],
        restored_train_steps=mine[0], restored_frames=mine[1], loaded=not newer,
    )
    return not newer
