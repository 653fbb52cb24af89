"""MP4 clips of full-colour env frames, written through the ffmpeg binary that imageio-ffmpeg ships."""

from __future__ import annotations

import pathlib
from collections.abc import Generator
from typing import Any

import numpy as np


class Clip:
    """Verbs: ``add`` an RGB frame (H x W x 3 uint8), ``close``. Frames after the first must keep its size."""

    def __init__(self, path: pathlib.Path, fps: int = 30) -> None:
        self.path = path
        self.fps = fps
        self.frames = 0
        self._writer: Generator[Any, bytes | None, None] | None = None
        self._size: tuple[int, int] | None = None

    def add(self, frame: np.ndarray) -> None:
        import imageio_ffmpeg

        frame = np.ascontiguousarray(frame, np.uint8)
        if frame.ndim != 3 or frame.shape[2] != 3:
            raise ValueError(f"a clip takes RGB frames of shape (H, W, 3), got {frame.shape}")
        size = (frame.shape[1], frame.shape[0])
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # H.264 in yuv420p (plays everywhere) wants even sizes: macro_block_size=2 rounds odd ones up.
            self._writer = imageio_ffmpeg.write_frames(
                str(self.path), size, fps=self.fps, codec="libx264", pix_fmt_out="yuv420p", macro_block_size=2,
                output_params=["-loglevel", "error"],
            )
            self._writer.send(None)
            self._size = size
        elif size != self._size:
            raise ValueError(f"frame size {size} differs from the clip's {self._size}")
        self._writer.send(frame.tobytes())
        self.frames += 1

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
