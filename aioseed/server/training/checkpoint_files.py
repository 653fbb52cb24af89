"""A checkpoint's files read with care: a truncated, overwritten or foreign file is a user error that names the
file and what is wrong with it, never TensorFlow's ``IndexError`` or ``UnicodeDecodeError``.

A checkpoint ``ckpt-N`` is an index (``ckpt-N.index``, a table of every tensor's place), its data shards
(``ckpt-N.data-00000-of-00001``) and the directory's state file (``checkpoint``, naming the latest).
"""

from __future__ import annotations

import pathlib
from typing import Any

from aioseed.errors import InvalidInput, MissingFile

STATE_FILE = "checkpoint"


class DamagedCheckpoint(InvalidInput):
    """A checkpoint file that exists but cannot be read: truncated, overwritten or not a checkpoint's."""


def first_line(exc: BaseException) -> str:
    """The first line of TensorFlow's error (at most 300 characters), or its type when it has no message."""
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__


def latest_checkpoint(directory: pathlib.Path) -> str | None:
    """The checkpoint ``directory``'s state file names as the latest (None without one); DamagedCheckpoint when the
    state file is not one (TensorFlow raises UnicodeDecodeError on some, and takes others for no checkpoint: a learner
    would start over beside the run's checkpoints)."""
    import tensorflow as tf
    from google.protobuf import text_format
    from tensorflow.python.training.checkpoint_state_pb2 import CheckpointState  # the state file's proto (no public name)

    state = directory / STATE_FILE
    try:
        text_format.Parse(state.read_text(encoding="utf-8"), CheckpointState())
    except FileNotFoundError:
        return None
    except (UnicodeDecodeError, text_format.ParseError) as exc:
        raise DamagedCheckpoint(
            f"{state} is damaged or not a checkpoint state file ({first_line(exc)}); "
            "delete it to start over, or name a checkpoint (logs/x/checkpoints/ckpt-N)"
        ) from None
    return tf.train.latest_checkpoint(str(directory))


def check_index(path: str) -> None:
    """Opens ``path``'s index: MissingFile without one, DamagedCheckpoint when it is not a checkpoint's."""
    import tensorflow as tf

    index = f"{path}.index"
    if not pathlib.Path(index).is_file():
        raise MissingFile(f"{index} is missing: no checkpoint {path}")
    try:
        tf.train.load_checkpoint(path)
    except tf.errors.OpError as exc:
        raise DamagedCheckpoint(f"{index} is truncated or damaged ({first_line(exc)})") from None


def restore_error(path: str, exc: BaseException) -> Exception | None:
    """The user error for a restore of ``path`` (whose index opened) that failed with ``exc`` reading a data file;
    None for an error of another kind."""
    import tensorflow as tf

    shards = sorted(pathlib.Path(path).parent.glob(f"{pathlib.Path(path).name}.data-*-of-*"))
    expected = int(shards[0].name.rpartition("-of-")[2]) if shards else 1
    if isinstance(exc, tf.errors.NotFoundError) or len(shards) < expected:
        return MissingFile(f"a data file of checkpoint {path} is missing ({first_line(exc)})")
    data: Any = shards[0] if len(shards) == 1 else f"{path}.data-*"
    # A short file: IndexError ("Read less bytes than requested"); a bad checksum: a bare OpError or DataLossError.
    if isinstance(exc, (IndexError, tf.errors.DataLossError)) or type(exc) is tf.errors.OpError:
        return DamagedCheckpoint(f"{data} is truncated or damaged ({first_line(exc)})")
    return None
