"""Learner metrics kept on the event loop, sampled once a second into a bounded history.

``Stats`` accumulates raw observations; ``take`` turns what arrived since the
previous call into one flat snapshot named after the module map
(``charts/``, ``batcher/``, ``inference/``, ``queue/``, ``learner/``,
``losses/``). One task calls ``take`` per interval and keeps the snapshots in a
``History``; logs, TensorBoard, the console and Prometheus all read from it.
"""

from __future__ import annotations

import collections
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from aioseed.server.batching.latency import LatencyCounts

WINDOW = 4096
"""Samples of a per-batch or per-message quantity kept between two snapshots."""


def _percentile(values: collections.deque[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else math.nan


EPISODE_WINDOWS = ("returns", "lengths", "eval_returns", "right_returns")
"""The windows of ended episodes that a checkpoint keeps (``Stats.episode_state``)."""

ENDED_KEPT = 100_000
"""Episodes kept for TensorBoard's per-episode returns between two summaries."""


class Stats:
    """Verbs: ``record_batch``, ``record_latency``, ``record_episodes``, ``record_train``, ``take``."""

    def __init__(self, window: int = 100, keep_ended: bool = False, rows_per_env: int = 1) -> None:
        """``keep_ended``: keep each episode for ``take_ended`` (only a TensorBoard writer drains them).
        ``rows_per_env``: a game with several controlled players gives a row per player for each of its steps;
        frames count the game's steps, so rows' frames are divided by it."""
        self.started = time.monotonic()
        self.frames = 0
        self.rows_per_env = rows_per_env
        self._row_frames = 0
        self.train_steps = 0
        self.episodes = 0
        self.partial_episodes = 0
        """Episodes that ended after beginning unseen (an actor that reconnected with its envs mid-episode, to a
        learner restarted since), in this process: their returns would be a part of the game's, so they are counted here only."""
        self.returns: collections.deque[float] = collections.deque(maxlen=window)
        self.lengths: collections.deque[int] = collections.deque(maxlen=window)
        self.last_return = math.nan
        self.keep_ended = keep_ended
        self.ended: collections.deque[tuple[int, float]] = collections.deque(maxlen=ENDED_KEPT)
        """(frames when it ended, return) of each training episode since ``take_ended``."""
        self.eval_returns: collections.deque[float] = collections.deque(maxlen=window)
        """Returns of evaluation envs' episodes (not in ``returns``)."""
        self.right_returns: collections.deque[float] = collections.deque(maxlen=window)
        """Returns of right-side players' episodes (multi-player Football; not in ``returns``)."""
        self.losses: dict[str, float] = {}
        self.policy_lag = math.nan
        self._batch_sizes: collections.deque[int] = collections.deque(maxlen=WINDOW)
        self._fill_ms: collections.deque[float] = collections.deque(maxlen=WINDOW)
        self._inference_ms: collections.deque[float] = collections.deque(maxlen=WINDOW)
        self._latency_ms: collections.deque[float] = collections.deque(maxlen=WINDOW)
        self.latency_counts = LatencyCounts()
        """Every action latency, counted (the p99 of any span: the batching tuner's holds, the bench's windows)."""
        self.rows = 0
        """Env rows answered by inference batches (evaluation envs' and phantom rows included)."""
        self._mark = (self.started, 0, 0, 0)

    def restore(self, frames: int, train_steps: int) -> None:
        """Counters from a checkpoint: frames and train steps go on from there."""
        self.frames, self.train_steps = frames, train_steps
        self._row_frames = frames * self.rows_per_env
        self._mark = (time.monotonic(), frames, train_steps, self.rows)

    def episode_state(self) -> dict[str, Any]:
        """The episode count and windows, JSON-ready (``EpisodeWindow`` saves them with a checkpoint)."""
        windows = {name: list(getattr(self, name).copy()) for name in EPISODE_WINDOWS}
        return {"episodes": self.episodes, "last_return": self.last_return, **windows}

    def restore_episodes(self, state: Mapping[str, Any]) -> None:
        """What ``episode_state`` gave, all or nothing (TypeError, ValueError or KeyError for a damaged state)."""
        windows = {name: [(int if name == "lengths" else float)(value) for value in state[name]] for name in EPISODE_WINDOWS}
        episodes, last_return = int(state["episodes"]), float(state["last_return"])
        for name, values in windows.items():
            window = getattr(self, name)
            window.clear()
            window.extend(values)  # a smaller return_window than the run's keeps the latest
        self.episodes, self.last_return = episodes, last_return

    def full_window(self) -> bool:
        """As many episodes as the mean return averages have ended."""
        return len(self.returns) == self.returns.maxlen

    def record_batch(self, size: int, fill_s: float, inference_s: float, frames: int) -> None:
        """``frames``: the batch's rows' env steps times frames per step."""
        self.record_frames(frames)
        self.rows += size
        self._batch_sizes.append(size)
        self._fill_ms.append(fill_s * 1e3)
        self._inference_ms.append(inference_s * 1e3)

    def record_frames(self, frames: int) -> None:
        """Frames of rows that arrived without an inference batch (IMPALA mode's uploads)."""
        self._row_frames += frames
        self.frames = self._row_frames // self.rows_per_env

    def record_latency(self, seconds: float) -> None:
        """Action latency of one message: rows submitted -> actions ready."""
        self._latency_ms.append(seconds * 1e3)
        self.latency_counts.add(seconds * 1e3)

    def record_episodes(
        self, returns: np.ndarray, lengths: np.ndarray, evaluation: np.ndarray | None = None, right: np.ndarray | None = None
    ) -> None:
        """``evaluation`` and ``right``: <bool>[E] episodes of evaluation envs and of right-side players (each kept
        apart from ``returns``, which the mean return, the curves and the stop conditions read)."""
        if evaluation is not None and evaluation.any():  # of a sided game, the left side's: it is what training plays
            self.eval_returns.extend(returns[evaluation if right is None else evaluation & ~right].tolist())
            keep = ~evaluation
            returns, lengths, right = returns[keep], lengths[keep], None if right is None else right[keep]
        if right is not None and right.any():
            self.right_returns.extend(returns[right].tolist())
            returns, lengths = returns[~right], lengths[~right]
        if not len(returns):
            return
        self.episodes += len(returns)
        self.returns.extend(returns.tolist())
        if self.keep_ended:
            self.ended.extend((self.frames, r) for r in returns.tolist())
        self.lengths.extend(lengths.tolist())
        self.last_return = float(returns[-1])

    def take_ended(self) -> list[tuple[int, float]]:
        """The episodes recorded since the last call, oldest first (at most ``ENDED_KEPT``)."""
        ended = []
        while self.ended:  # popleft, not list + clear: the event loop may record episodes meanwhile
            ended.append(self.ended.popleft())
        return ended

    def record_train(self, metrics: dict[str, float], policy_lag: float) -> None:
        self.train_steps += 1
        self.losses = metrics
        self.policy_lag = policy_lag

    def mean_return(self) -> float:
        return float(np.mean(self.returns)) if self.returns else math.nan

    def take(self, extra: dict[str, float] | None = None) -> dict[str, float]:
        """One snapshot: counters, and rates and distributions since the previous ``take``. ``extra``'s
        ``learner/train_steps`` (the learner's parameter version: updates applied) is what the rate counts, where
        given: a train batch of several epochs or minibatches is as many updates."""
        extra = extra or {}
        steps = extra.get("learner/train_steps", float(self.train_steps))
        now = time.monotonic()
        mark_time, mark_frames, mark_steps, mark_rows = self._mark
        elapsed = max(now - mark_time, 1e-9)
        self._mark = (now, self.frames, steps, self.rows)
        sizes = self._batch_sizes
        out = {
            "time": time.time(),
            "charts/frames": float(self.frames),
            "charts/frames_per_s": (self.frames - mark_frames) / elapsed,
            "charts/episodes": float(self.episodes),
            "charts/partial_episodes": float(self.partial_episodes),
            "charts/return": self.mean_return(),
            "charts/return_last": self.last_return,
            "charts/eval_return": float(np.mean(self.eval_returns)) if self.eval_returns else math.nan,
            "charts/return_right": float(np.mean(self.right_returns)) if self.right_returns else math.nan,
            "charts/episode_length": float(np.mean(self.lengths)) if self.lengths else math.nan,
            "learner/train_steps": steps,
            "learner/train_steps_per_s": (steps - mark_steps) / elapsed,
            "learner/policy_lag": self.policy_lag,
            "batcher/batches": float(len(sizes)),
            "batcher/rows_per_s": (self.rows - mark_rows) / elapsed,
            "batcher/batch_size": float(np.mean(sizes)) if sizes else math.nan,
            "batcher/batch_size_max": float(max(sizes)) if sizes else math.nan,
            "batcher/fill_ms_p50": _percentile(self._fill_ms, 50),
            "batcher/fill_ms_p99": _percentile(self._fill_ms, 99),
            "inference/ms": float(np.mean(self._inference_ms)) if self._inference_ms else math.nan,
            "inference/latency_ms_p50": _percentile(self._latency_ms, 50),
            "inference/latency_ms_p99": _percentile(self._latency_ms, 99),
        }
        for window in (sizes, self._fill_ms, self._inference_ms, self._latency_ms):
            window.clear()
        out.update(self.losses)
        out.update(extra)
        return out


class History:
    """The last ``capacity`` snapshots, oldest first. Verbs: ``append``, ``latest``, ``since``."""

    def __init__(self, capacity: int = 900) -> None:
        self._points: collections.deque[dict[str, float]] = collections.deque(maxlen=capacity)

    def append(self, snapshot: dict[str, float]) -> None:
        self._points.append(snapshot)

    @property
    def latest(self) -> dict[str, float]:
        return self._points[-1] if self._points else {}

    def since(self, timestamp: float = 0.0) -> list[dict[str, float]]:
        """Snapshots taken after ``timestamp`` (time.time())."""
        return [p for p in self._points if p["time"] > timestamp]
