"""A damaged checkpoint file is a user error naming the file (load_policy, eval, serve, a restarted learner), and
``serve --watch`` never exits because of one: the served policy stays (issue 57, items 1, 2 and 5)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pathlib
from collections.abc import AsyncIterator, Callable

import numpy as np
import pytest
import tensorflow as tf
from structlog.testing import capture_logs

from aioseed.errors import UserError
from aioseed.server.acting.served import ServedPolicy
from aioseed.server.reporting.episode_window import EpisodeWindow
from aioseed.server.reporting.stats import Stats
from aioseed.server.training.checkpoint import Checkpointer
from aioseed.server.training.trainer import Progress
from aioseed.server.trajectories.replay import Replay
from tests.server.trajectories.test_replay import array_unrolls
from tests.waiting import until

DATA = ".data-00000-of-00001"


def truncate(file: pathlib.Path, size: Callable[[int], int]) -> None:
    file.write_bytes(file.read_bytes()[: size(file.stat().st_size)])


def flip(file: pathlib.Path) -> None:
    data = bytearray(file.read_bytes())
    for i in range(0, len(data), 7):
        data[i] ^= 0xFF
    file.write_bytes(bytes(data))


DAMAGES: dict[str, tuple[Callable[[str], None], str]] = {
    # case: (damage(checkpoint path), what the error says, with {path} for the checkpoint's path)
    "data cut to half": (lambda p: truncate(pathlib.Path(p + DATA), lambda n: n // 2), "{path}" + DATA + " is truncated or damaged (Read less bytes"),
    "data cut to 10 bytes": (lambda p: truncate(pathlib.Path(p + DATA), lambda n: 10), "{path}" + DATA + " is truncated or damaged"),
    "data empty": (lambda p: truncate(pathlib.Path(p + DATA), lambda n: 0), "{path}" + DATA + " is truncated or damaged"),
    "data flipped": (lambda p: flip(pathlib.Path(p + DATA)), "{path}" + DATA + " is truncated or damaged (The length checksum"),
    "data missing": (lambda p: os.remove(p + DATA), "a data file of checkpoint {path} is missing"),
    "index cut to half": (lambda p: truncate(pathlib.Path(p + ".index"), lambda n: n // 2), "{path}.index is truncated or damaged (not an sstable"),
    "index empty": (lambda p: truncate(pathlib.Path(p + ".index"), lambda n: 0), "{path}.index is truncated or damaged"),
    "index flipped": (lambda p: flip(pathlib.Path(p + ".index")), "{path}.index is truncated or damaged"),
}


def weights(value: float) -> dict[str, tf.Variable]:
    return {"w": tf.Variable(tf.fill([4096], value)), "b": tf.Variable(tf.fill([64], value))}


def save(directory: pathlib.Path, n: int) -> str:
    """Writes checkpoint ckpt-N (the directory's latest) of weights all N."""
    return Checkpointer(directory, weights(float(n))).save(Progress(train_steps=n, frames=n))


@pytest.mark.parametrize("case", list(DAMAGES))
def test_a_damaged_checkpoint_is_a_user_error_naming_the_file_and_restores_nothing(tmp_path, case) -> None:
    damage, message = DAMAGES[case]
    path = save(tmp_path, 1)
    damage(path)
    objects = weights(7.0)
    with pytest.raises(UserError) as raised:
        Checkpointer(tmp_path, objects).restore(path)
    assert message.format(path=path) in str(raised.value)
    assert all(np.all(v.numpy() == 7.0) for v in objects.values())  # all or nothing


@pytest.mark.parametrize("state", [b"\xff\xfe\x00garbage", b'model_checkpoint_path: "ckpt-1"\nall_model_checkpoint_paths: {{{'])
def test_a_state_file_that_is_no_checkpoint_state_is_a_user_error_naming_it(tmp_path, state) -> None:
    save(tmp_path, 1)
    (tmp_path / "checkpoint").write_bytes(state)
    with pytest.raises(UserError, match=f"{tmp_path / 'checkpoint'} is damaged or not a checkpoint state file"):
        Checkpointer(tmp_path, weights(7.0)).restore()


def with_attachments(directory: pathlib.Path, value: float) -> tuple[Checkpointer, Stats, Replay]:
    """A checkpointer of weights all ``value`` that keeps an episode window and a replay beside them."""
    checkpointer, stats, replay = Checkpointer(directory, weights(value)), Stats(4), Replay(16)
    checkpointer.attach("episodes", EpisodeWindow(stats))
    checkpointer.attach("replay", replay)
    return checkpointer, stats, replay


def test_a_checkpoint_restored_after_a_roll_back_leaves_the_replay_and_episodes_saved_since(tmp_path) -> None:
    """The state file rolled back to ckpt-1 (ckpt-2 was damaged, say): the one replay and episode window kept are
    ckpt-2's, experience and returns ckpt-1's weights never had. They were read beside it."""
    writer, stats, replay = with_attachments(tmp_path, 1.0)
    first = writer.save(Progress(train_steps=1, frames=10))
    stats.record_episodes(np.array([5.0]), np.array([3]))
    replay.insert(array_unrolls(2))
    writer.save(Progress(train_steps=2, frames=20))
    for path, kept in ((first, (0, 0)), (None, (1, 2))):  # ckpt-1, then the latest
        reader, stats, replay = with_attachments(tmp_path, 7.0)
        reader.restore(path)
        assert (stats.episodes, len(replay)) == kept


@contextlib.asynccontextmanager
async def watching(directory: pathlib.Path) -> AsyncIterator[tuple[ServedPolicy, list[dict]]]:
    """``serve --watch``'s watcher over ``directory``, serving ckpt-1: (the served policy, the log entries so far). At
    the end the watcher must still run (before, a damaged file raised out of it and serve exited 1), and the weights
    must be those of the checkpoint served."""
    from aioseed.commands.serve import watch

    objects = weights(0.0)
    first = save(directory, 1)
    progress = Checkpointer(directory, objects).restore(first)
    served = ServedPolicy(
        act=lambda *_: None, restore=lambda path: Checkpointer(directory, objects).restore(path), checkpoint=first,
        frames=progress.frames, train_steps=1,
    )

    class Learner:
        def set_version(self, train_steps: int) -> None:
            pass

    with capture_logs() as logs:
        task = asyncio.create_task(watch(served, Learner(), directory, every_s=0.01))
        try:
            yield served, logs
            assert not task.done()
            assert all(np.all(v.numpy() == served.train_steps) for v in objects.values())
        finally:
            task.cancel()


def events(logs: list[dict], name: str) -> list[dict]:
    return [entry for entry in logs if entry["event"] == name]


@pytest.mark.parametrize("case", list(DAMAGES))
async def test_serve_watch_keeps_serving_through_a_damaged_newer_checkpoint(tmp_path, case) -> None:
    damage, message = DAMAGES[case]
    async with watching(tmp_path) as (served, logs):
        damage(save(tmp_path, 2))
        await until(lambda: events(logs, "checkpoint_reload_failed"), "the failed reload")
        [failed] = events(logs, "checkpoint_reload_failed")
        assert message.format(path=tmp_path / "ckpt-2") in failed["error"] and failed["serving"].endswith("ckpt-1")
        assert served.checkpoint.endswith("ckpt-1")
        save(tmp_path, 3)  # the run writes on: the next good checkpoint is served
        await until(lambda: served.checkpoint.endswith("ckpt-3"), "ckpt-3 served")


async def test_serve_watch_logs_an_unreadable_state_file_once_per_change_and_serves_on(tmp_path) -> None:
    async with watching(tmp_path) as (served, logs):
        save(tmp_path, 2)
        (tmp_path / "checkpoint").write_bytes(b"\xff\xfe\x00garbage")
        await until(lambda: events(logs, "checkpoint_state_unreadable"), "the unreadable state file")
        await asyncio.sleep(0.2)  # some twenty more polls of the same file: nothing more is logged
        [unreadable] = events(logs, "checkpoint_state_unreadable")
        assert "is damaged or not a checkpoint state file" in unreadable["error"] and served.checkpoint.endswith("ckpt-1")
        (tmp_path / "checkpoint").unlink()
        save(tmp_path, 3)  # a good state file again, naming ckpt-3
        await until(lambda: served.checkpoint.endswith("ckpt-3"), "ckpt-3 served")
        assert len(events(logs, "checkpoint_state_unreadable")) == 1
