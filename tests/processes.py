"""Real aioseed processes for end-to-end tests: started, watched through their logs, stopped."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import urllib.request
from collections.abc import Sequence

PYTHON = sys.executable
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}


class Process:
    """An ``aioseed`` subcommand whose stderr lines are collected as they come."""

    def __init__(self, args: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        """``env`` adds to the environment; ``cwd`` (default: this one) is also where ``-m aioseed`` looks first."""
        self.args = [PYTHON, "-m", "aioseed", *args]
        self._env = {**ENV, **(env or {})}
        self._cwd = cwd
        self.lines: list[str] = []
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task | None = None
        self._new_line = asyncio.Event()

    async def start(self) -> Process:
        self.proc = await asyncio.create_subprocess_exec(
            *self.args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=self._env, cwd=self._cwd
        )
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        async for raw in self.proc.stderr:
            self.lines.append(raw.decode(errors="replace").rstrip())
            self._new_line.set()

    async def wait_for_line(self, pattern: str, timeout_s: float = 60.0) -> re.Match:
        """The first log line matching ``pattern``, waiting up to ``timeout_s``."""
        regex = re.compile(pattern)
        seen = 0

        async def scan() -> re.Match:
            nonlocal seen
            while True:
                for line in self.lines[seen:]:
                    seen += 1
                    if match := regex.search(line):
                        return match
                if self.proc.returncode is not None and self._reader.done():
                    raise AssertionError(f"process exited ({self.proc.returncode}) before {pattern!r}:\n{self.log}")
                self._new_line.clear()
                try:
                    await asyncio.wait_for(self._new_line.wait(), 0.5)
                except TimeoutError:
                    pass

        try:
            return await asyncio.wait_for(scan(), timeout_s)
        except TimeoutError:
            raise AssertionError(f"no line matching {pattern!r} within {timeout_s}s:\n{self.log}") from None

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    async def wait(self, timeout_s: float = 60.0) -> int:
        assert self.proc is not None
        code = await asyncio.wait_for(self.proc.wait(), timeout_s)
        await self._reader
        return code

    async def stdout(self) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        return (await self.proc.stdout.read()).decode()

    def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()

    @property
    def log(self) -> str:
        return "\n".join(self.lines[-60:])

    def errors(self) -> list[str]:
        """Error-level log lines and tracebacks."""
        return [line for line in self.lines if "[error]" in line or "[critical]" in line or "Traceback" in line]


CARTPOLE_FRAME_BUDGET = 500_000
CARTPOLE_TO_195 = (
    # At 5e-4, 10 of 10 runs here reached 195 (139-180K frames, median ~154K). At the default 1e-3 most
    # reach it after ~100K, but some sit at a mean of 120-150 for 400K frames: 1 of 8 took 488K, and one
    # CI run ended its 500K at 136.
    "--learner.impala.learning-rate", "5e-4",
    "--learner.seed", "1",
    "--learner.return-window", "20",
    "--learner.stop.at-return", "195",
    "--learner.stop.after-frames", str(CARTPOLE_FRAME_BUDGET),
    "--learner.console.port", "0",
)
"""``aioseed run`` flags of the end-to-end CartPole runs: mean return 195 over 20 episodes, within the frame budget."""


def console_metrics(console: str) -> dict[str, float]:
    """The latest metrics snapshot of the console at ``console`` (http://HOST:PORT; reading is open on loopback)."""
    with urllib.request.urlopen(f"{console}/api/metrics", timeout=5) as reply:
        return json.loads(reply.read())


async def run_to_end(args: Sequence[str], timeout_s: float = 240, env: dict[str, str] | None = None) -> str:
    """``aioseed run ARGS`` (``env`` added to its environment) must exit 0 with no error line: its log."""
    run = await Process(["run", *args], env=env).start()
    try:
        assert await run.wait(timeout_s=timeout_s) == 0, run.log
    finally:
        run.kill()
    assert run.errors() == [], run.log
    return "\n".join(run.lines)


async def run_to_return(args: Sequence[str], timeout_s: float = 240, env: dict[str, str] | None = None) -> tuple[str, int, float]:
    """``aioseed run ARGS`` must exit 0 on its return condition with no error line:
    (its log, the frames and the mean return at the stop)."""
    log = await run_to_end(args, timeout_s, env)
    finished = re.search(r"stop_condition frames=(\d+) mean_return=(-?[\d.]+) reason=return", log)
    assert finished, log
    return log, int(finished.group(1)), float(finished.group(2))


async def train_through_processes(learner_args: Sequence[str], actor_args: Sequence[str], wire: str, slots: int) -> None:
    """A learner and one actor process (``actor_args`` get ``--learner``): the learner serves the ``wire``
    spec, the actor's ``slots`` envs connect, a train step happens, and SIGTERM stops it cleanly."""
    learner = await Process(["learner", "--server.host", "127.0.0.1", "--server.port", "0", "--console.port", "0", *learner_args]).start()
    actor = None
    try:
        port = int((await learner.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        assert wire in "\n".join(learner.lines)
        actor = await Process(["actor", "--learner", f"127.0.0.1:{port}", *actor_args]).start()
        await learner.wait_for_line(rf"stream_connected .*slots={slots}")
        await learner.wait_for_line(r"progress .*train_steps=[1-9]", timeout_s=180)
        learner.signal(signal.SIGTERM)
        assert await learner.wait() == 0
        assert learner.errors() == [], learner.log
    finally:
        learner.kill()
        if actor is not None:
            actor.kill()
