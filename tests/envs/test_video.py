"""MP4 clips through imageio-ffmpeg: frames in, the same frames' count and size out."""

from __future__ import annotations

import imageio_ffmpeg
import numpy as np
import pytest

from aioseed.envs.video import Clip


def test_a_clip_holds_every_frame_at_its_size(tmp_path) -> None:
    clip = Clip(tmp_path / "a" / "clip.mp4", fps=10)
    for value in range(0, 250, 10):
        clip.add(np.full((210, 160, 3), value, np.uint8))
    clip.close()
    frames = imageio_ffmpeg.read_frames(str(tmp_path / "a" / "clip.mp4"))
    meta = next(frames)
    assert meta["size"] == (160, 210) and meta["fps"] == 10
    decoded = [np.frombuffer(f, np.uint8).reshape(210, 160, 3) for f in frames]
    assert len(decoded) == 25
    assert abs(float(decoded[-1].mean()) - 240) < 3  # lossy, but the last frame is the bright one


def test_frames_must_be_rgb_and_keep_the_first_size(tmp_path) -> None:
    clip = Clip(tmp_path / "clip.mp4")
    with pytest.raises(ValueError, match=r"RGB frames of shape \(H, W, 3\)"):
        clip.add(np.zeros((84, 84), np.uint8))
    clip.add(np.zeros((84, 84, 3), np.uint8))
    with pytest.raises(ValueError, match="differs from the clip's"):
        clip.add(np.zeros((42, 84, 3), np.uint8))
    clip.close()
