"""The tracking sender on its own, against a fake backend: a backlog drops summaries, never the final checkpoint."""

from __future__ import annotations

import pathlib
import threading
from collections.abc import Mapping

from aioseed.server.reporting.tracking import MAX_PENDING, Sender


class Stalled:
    """A backend whose service is down until ``back`` is set: each call waits for it."""

    def __init__(self) -> None:
        self.back = threading.Event()
        self.scalars_sent, self.checkpoints, self.closed = 0, [], None

    def scalars(self, snapshot: Mapping[str, float], frames: int) -> None:
        self.back.wait()
        self.scalars_sent += 1
        self.last = snapshot["charts/frames"]

    def clip(self, path: pathlib.Path, frames: int) -> None: ...

    def checkpoint(self, files: list[pathlib.Path], name: str, frames: int) -> None:
        self.checkpoints.append(name)

    def close(self, ok: bool) -> None:
        self.closed = ok


def test_a_backlog_drops_summaries_but_never_the_final_checkpoint(tmp_path) -> None:
    backend = Stalled()
    sender = Sender(backend, tmp_path / "videos", checkpoints="last")
    for i in range(MAX_PENDING + 20):  # some 10 minutes of summaries against a service that is down
        sender.summary({"charts/frames": float(i)}, i)
    sender.checkpoint(str(tmp_path / "ckpt-9"), 900, final=True)
    backend.back.set()
    sender.close(ok=True)
    assert sender.dropped == 20
    assert backend.checkpoints == ["ckpt-9"] and backend.closed is True  # before: the checkpoint was dropped too
    # Closing, the summaries still queued behind a slow service are left for the newest (the final one).
    assert backend.scalars_sent <= 2 and backend.last == float(MAX_PENDING - 1)
