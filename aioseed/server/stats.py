"""Learner metrics kept on the event loop; read as snapshots by logs, TensorBoard and the console."""

from __future__ import annotations

import collections
import time

import numpy as np


class Stats:
    """Verbs: ``record_batch``, ``record_episodes``, ``record_train``, ``snapshot``."""

    def __init__(self, window: int = 100) -> None:
        self.started = time.monotonic()
        self.frames = 0
        self.train_steps = 0
        self.episodes = 0
        self.inference_batches = 0
        self.returns: collections.deque[float] = collections.deque(maxlen=window)
        self.lengths: collections.deque[int] = collections.deque(maxlen=window)
        self.batch_sizes: collections.deque[int] = collections.deque(maxlen=1000)
        self.fill_ms: collections.deque[float] = collections.deque(maxlen=1000)
        self.inference_ms: collections.deque[float] = collections.deque(maxlen=1000)
        self.max_batch_size_seen = 0
        self.losses: dict[str, float] = {}
        self.policy_lag = 0.0
        self._rate_mark = (self.started, 0)
        self.frames_per_s = 0.0

    def record_batch(self, size: int, fill_s: float, inference_s: float, frames: int) -> None:
        self.inference_batches += 1
        self.frames += frames
        self.batch_sizes.append(size)
        self.fill_ms.append(fill_s * 1e3)
        self.inference_ms.append(inference_s * 1e3)
        self.max_batch_size_seen = max(self.max_batch_size_seen, size)

    def record_episodes(self, returns: np.ndarray, lengths: np.ndarray) -> None:
        self.episodes += len(returns)
        self.returns.extend(returns.tolist())
        self.lengths.extend(lengths.tolist())

    def record_train(self, metrics: dict[str, float], policy_lag: float) -> None:
        self.train_steps += 1
        self.losses = metrics
        self.policy_lag = policy_lag

    def mean_return(self, last: int | None = None) -> float:
        values = list(self.returns)[-last:] if last else list(self.returns)
        return float(np.mean(values)) if values else float("nan")

    def snapshot(self) -> dict[str, float]:
        """Flat metrics named after the module map; updates frames/s since the previous snapshot."""
        now = time.monotonic()
        mark_time, mark_frames = self._rate_mark
        if now - mark_time > 0.2:
            self.frames_per_s = (self.frames - mark_frames) / (now - mark_time)
            self._rate_mark = (now, self.frames)
        out = {
            "charts/frames": float(self.frames),
            "charts/frames_per_s": self.frames_per_s,
            "charts/episodes": float(self.episodes),
            "charts/return": self.mean_return(),
            "charts/episode_length": float(np.mean(self.lengths)) if self.lengths else float("nan"),
            "learner/train_steps": float(self.train_steps),
            "learner/policy_lag": self.policy_lag,
            "batcher/batch_size": float(np.mean(self.batch_sizes)) if self.batch_sizes else 0.0,
            "batcher/batch_size_max": float(self.max_batch_size_seen),
            "batcher/fill_ms": float(np.mean(self.fill_ms)) if self.fill_ms else 0.0,
            "inference/ms": float(np.mean(self.inference_ms)) if self.inference_ms else 0.0,
        }
        out.update(self.losses)
        return out
