"""aioseed serve --watch: a newer checkpoint that does not load is logged and skipped (the served one stays, and it
is not tried again); the next one that loads is served."""

from __future__ import annotations

import asyncio

import pytest

from aioseed.commands.serve import watch
from aioseed.errors import InvalidInput
from tests.waiting import until


class Served:
    def __init__(self) -> None:
        self.checkpoint, self.train_steps, self.tried = "", 0, []

    def reload(self, path: str) -> None:
        self.tried.append(path.rsplit("/", 1)[-1])
        if path.endswith("ckpt-5"):
            raise InvalidInput("checkpoint ckpt-5 does not fit this learner")
        self.checkpoint, self.train_steps = path, 6


class Learner:
    def __init__(self) -> None:
        self.versions: list[int] = []

    def set_version(self, train_steps: int) -> None:
        self.versions.append(train_steps)


def latest(directory, name: str) -> None:
    """``name`` becomes the directory's latest checkpoint (TensorFlow's index file, and the checkpoint's own)."""
    (directory / f"{name}.index").write_bytes(b"")
    (directory / "checkpoint").write_text(f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n')


async def test_a_checkpoint_that_does_not_load_is_skipped_and_the_next_one_is_served(tmp_path) -> None:
    served, learner = Served(), Learner()
    task = asyncio.create_task(watch(served, learner, tmp_path, every_s=0.01))
    try:
        latest(tmp_path, "ckpt-5")
        await until(lambda: served.tried, "the watcher to try ckpt-5")
        await asyncio.sleep(0.2)  # some twenty more looks at the directory
        assert served.tried == ["ckpt-5"] and served.checkpoint == "" and learner.versions == []  # tried once, kept serving
        latest(tmp_path, "ckpt-6")
        await until(lambda: learner.versions, "ckpt-6 served")
        assert served.tried == ["ckpt-5", "ckpt-6"] and served.checkpoint.endswith("ckpt-6") and learner.versions == [6]
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
