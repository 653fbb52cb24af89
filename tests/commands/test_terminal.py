"""The live terminal display (rich) of aioseed run and learner, and the key=value lines without a terminal."""

from __future__ import annotations

import io
import math
import os
import pty
import re
import select
import subprocess
import sys
import time

import imageio_ffmpeg
from rich.console import Console

from aioseed.commands.terminal import TerminalProgress, wanted
from aioseed.server.config import StopConfig
from tests.processes import ENV


class Learner:
    """What the display reads: the latest snapshot and the console's URL."""

    console_url = "http://127.0.0.1:8080/#token=abc"

    def __init__(self) -> None:
        self.snapshot: dict[str, float] = {}

    def metrics(self) -> dict[str, float]:
        return self.snapshot


def render(progress: TerminalProgress) -> str:
    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=120)
    console.print(progress)
    return console.file.getvalue()


def snapshot(frames: float, mean: float) -> dict[str, float]:
    return {"charts/frames": frames, "charts/frames_per_s": 5000.0, "charts/return": mean, "charts/episodes": 40.0,
            "learner/train_steps": 12.0, "actors/envs": 256.0}


def test_the_display_shows_the_figures_each_stop_condition_and_the_console() -> None:
    learner, now = Learner(), [0.0]
    progress = TerminalProgress(learner, StopConfig(at_return=475.0, after_frames=1_000_000, after_seconds=600), "CartPole-v1", clock=lambda: now[0])
    progress.update()
    assert "waiting for the first metrics" in render(progress)
    learner.snapshot = snapshot(20_000, math.nan)  # no episode finished yet
    progress.update()
    assert "mean return -" in render(progress)
    learner.snapshot = snapshot(50_000, 100.0)
    progress.update()
    learner.snapshot, now[0] = snapshot(250_000, 250.0), 150.0
    progress.update()
    text = render(progress)
    assert "aioseed CartPole-v1   console http://127.0.0.1:8080/#token=abc" in text
    assert "frames 250,000   frames/s 5,000   mean return 250.0   episodes 40   train steps 12   envs 256" in text
    assert re.search(r"frames +━+.* 250,000 / 1,000,000", text) and re.search(r"mean return +━+.* 250\.0 / 475\.0", text)
    assert re.search(r"time +━+.* 150 / 600 s", text)
    frames, mean, seconds = progress.bars.tasks
    assert (frames.completed, seconds.completed) == (250_000, 150.0)
    assert mean.completed == (250 - 100) / (475 - 100)  # from the first mean seen to the target


def test_live_only_on_a_terminal_unless_asked() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert wanted("auto", Tty()) and not wanted("auto", io.StringIO())
    assert wanted("live", io.StringIO()) and not wanted("lines", Tty())


RUN = [sys.executable, "-m", "aioseed", "run", "--num-actors", "1", "--envs-per-actor", "16", "--envs-per-message", "16",
       "--learner.stop.after-frames", "20000", "--learner.console.port", "0", "--learner.log-every-s", "0.5"]


def test_on_a_terminal_run_shows_the_live_display_and_not_the_progress_lines(tmp_path) -> None:
    main, child = pty.openpty()
    env = {**ENV, "COLUMNS": "120", "LINES": "40", "TERM": "xterm"}
    process = subprocess.Popen([*RUN, "--learner.logdir", str(tmp_path)], stdin=child, stdout=child, stderr=child, env=env, close_fds=True)
    os.close(child)
    output, deadline = b"", time.monotonic() + 180
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
        elif process.poll() is not None:
            break
    os.close(main)
    assert process.wait(timeout=30) == 0, output.decode(errors="replace")[-3000:]
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", output.decode(errors="replace"))
    assert "aioseed CartPole-v1   console http://127.0.0.1:" in text, text[-3000:]
    assert re.search(r"frames +━*.* [\d,]+ / 20,000", text), text[-3000:]
    assert "stop_condition" in text  # other log lines still print, above the display
    assert not re.search(r"\[info\] progress ", text)


def test_without_a_terminal_run_writes_key_value_progress_lines(tmp_path) -> None:
    # With an evaluation actor, which records its first episode (and every 10th) to LOGDIR/videos.
    done = subprocess.run([*RUN, "--learner.logdir", str(tmp_path), "--evaluation-envs", "1"], capture_output=True, text=True, env=ENV, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"\[info\] progress .*fps=\d+ frames=\d+ .*mean_return=", done.stderr), done.stderr[-3000:]
    assert "\x1b[" not in done.stdout + done.stderr and "console http" not in done.stdout
    (clip,) = (tmp_path / "videos").glob("eval-*-000001.mp4")  # local actors log warnings only
    frames = imageio_ffmpeg.read_frames(str(clip))
    assert next(frames)["size"] == (600, 400) and sum(1 for _ in frames) >= 9  # CartPole's shortest episode, + 1
