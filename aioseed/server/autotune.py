"""Inference batching that tunes itself: the most env steps/s with action latency p99 under a target.

Method: hill climbing on a log grid of (``max_batch_size``, ``deadline_ms``), one grid step at a
time. Each setting is held for ``hold_s`` after ``settle_s`` of settling and scored by the env
steps/s measured over the hold; a setting whose latency p99 misses the target scores below every
setting that meets it. From the current setting the tuner tries one neighbour (one axis, one
step), moves there if it scores better by ``margin``, else goes back and tries the next; the last
direction that paid is tried first (momentum). When no neighbour pays it holds, and explores again
after ``reprobe_s``, or at once when the connected env rows change by a quarter (actors join or
leave) or throughput falls by ``drift`` against what the setting scored (the train step competing
for the CPU). Batch sizes above the connected rows are never tried: a batch closes when every
connected row waits anyway. One step per hold keeps it from oscillating.

The tuner is pure Python: the learner feeds it one ``Observation`` per metrics interval and applies
the settings it returns; tests drive it with simulated observations.
"""

from __future__ import annotations

import dataclasses
import math

import structlog

from aioseed.server.batcher import BatcherConfig

log = structlog.get_logger()

BATCH_SIZES = tuple(2**k for k in range(13))
"""1 .. 4096 rows."""
DEADLINES_MS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)


@dataclasses.dataclass(frozen=True)
class BatchingConfig:
    """The inference batching auto-tuner."""

    auto: bool = False
    """Let the tuner choose max_batch_size and deadline_ms (a manual change from the console turns it off)."""
    latency_target_ms: float | None = 50.0
    """Action latency p99 to stay under (None: pure throughput)."""
    hold_s: float = 3.0
    """Seconds each setting is measured, after settle_s."""
    settle_s: float = 1.0
    """Seconds after a change that are not measured (batches of the old setting drain)."""
    margin: float = 0.03
    """A neighbour must beat the current setting by this fraction to be taken (measurement noise)."""
    reprobe_s: float = 60.0
    """Seconds a converged setting is kept before its neighbours are tried again."""
    drift: float = 0.2
    """A converged setting whose throughput falls this fraction below its score is explored again."""

    def __post_init__(self) -> None:
        if self.latency_target_ms is not None and not self.latency_target_ms > 0:
            raise ValueError(f"latency_target_ms must be positive or None, got {self.latency_target_ms}")
        if not (self.hold_s > 0 and self.settle_s >= 0 and self.reprobe_s > 0):
            raise ValueError("hold_s and reprobe_s must be positive, settle_s >= 0")
        if not (0 <= self.margin < 1 and 0 < self.drift < 1):
            raise ValueError("margin must be in [0, 1) and drift in (0, 1)")


@dataclasses.dataclass(frozen=True)
class Observation:
    """What the learner measured over one metrics interval."""

    seconds: float
    """Length of the interval."""
    steps_per_s: float
    """Env rows answered per second."""
    latency_p99_ms: float
    """Action latency p99 (NaN when no message was answered)."""
    connected_rows: int
    """Env rows of connected streams."""


@dataclasses.dataclass
class _Measure:
    seconds: float = 0.0
    steps: float = 0.0
    p99: float = 0.0

    def add(self, observation: Observation) -> None:
        self.seconds += observation.seconds
        self.steps += observation.steps_per_s * observation.seconds
        if not math.isnan(observation.latency_p99_ms):
            self.p99 = max(self.p99, observation.latency_p99_ms)

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0


@dataclasses.dataclass(frozen=True)
class Decision:
    settings: BatcherConfig
    reason: str


class BatchTuner:
    """Verbs: ``observe`` one interval (returns a Decision when the settings should change)."""

    def __init__(self, config: BatchingConfig, start: BatcherConfig) -> None:
        self.config = config
        self._b = _nearest(BATCH_SIZES, start.max_batch_size)
        self._d = _nearest(DEADLINES_MS, start.deadline_ms)
        self._home: tuple[int, int] | None = None
        """The best setting so far while a neighbour is measured."""
        self._home_score = -math.inf
        self._candidates: list[tuple[int, int]] = []
        self._momentum: tuple[int, int] | None = None
        self._measure = _Measure()
        self._settling = config.settle_s
        self._converged_for = 0.0
        self._score = -math.inf
        self._rows = 0
        self.reason = "starting: measuring the initial setting"

    @property
    def settings(self) -> BatcherConfig:
        return BatcherConfig(BATCH_SIZES[self._b], DEADLINES_MS[self._d])

    @property
    def converged(self) -> bool:
        return self._home is None and not self._candidates and self._score > -math.inf

    def observe(self, observation: Observation) -> Decision | None:
        if observation.connected_rows <= 0:
            return None  # nothing to measure; keep the setting
        if self._rows and abs(observation.connected_rows - self._rows) > self._rows / 4:
            self._rows = observation.connected_rows
            return self._restart(f"connected rows changed to {observation.connected_rows}")
        self._rows = observation.connected_rows
        if self._settling > 0:
            self._settling -= observation.seconds
            return None
        self._measure.add(observation)
        if self.converged:
            return self._watch(observation)
        if self._measure.seconds < self.config.hold_s:
            return None
        return self._step(self._scored(self._measure))

    def _scored(self, measure: _Measure) -> float:
        """Steps/s, or for a setting that misses the latency target a negative score that prefers lower p99."""
        target = self.config.latency_target_ms
        if target is not None and measure.p99 > target:
            return -measure.p99
        return measure.steps_per_s

    def _step(self, score: float) -> Decision | None:
        here = (self._b, self._d)
        if self._home is None:  # measured the current setting itself
            self._score = score
            self._home, self._home_score = here, score
            self._candidates = self._neighbours(here)
        elif self._better(score, self._home_score):
            self._momentum = (here[0] - self._home[0], here[1] - self._home[1])
            self._home, self._home_score = here, score
            self._candidates = self._neighbours(here)
            self.reason = f"took {self._describe(here)}: {self._describe_score(score)}"
        if not self._candidates:
            return self._settle_home()
        return self._go(self._candidates.pop(0), f"trying a neighbour of {self._describe(self._home)}")

    def _better(self, score: float, than: float) -> bool:
        """By the margin when both meet the target; any gain in p99 (or meeting it) otherwise."""
        return score > than * (1 + self.config.margin) if than > 0 else score > than

    def _settle_home(self) -> Decision | None:
        home, score = self._home, self._home_score
        self._home, self._score, self._converged_for = None, score, 0.0
        self.reason = f"converged on {self._describe(home)}: {self._describe_score(score)}"
        log.info("batching_converged", max_batch_size=BATCH_SIZES[home[0]], deadline_ms=DEADLINES_MS[home[1]], score=round(score, 1))
        if home == (self._b, self._d):
            return None
        return self._go(home, self.reason, measure=False)

    def _watch(self, observation: Observation) -> Decision | None:
        """A converged setting: explore again after ``reprobe_s`` or when its throughput drifts."""
        self._converged_for += observation.seconds
        if self._measure.seconds >= self.config.hold_s:
            now = self._scored(self._measure)
            self._measure = _Measure()
            if self._score > 0 and now < self._score * (1 - self.config.drift):
                return self._restart(f"throughput fell to {self._describe_score(now)} from {self._describe_score(self._score)}")
        if self._converged_for >= self.config.reprobe_s:
            return self._restart("re-probing the neighbours")
        return None

    def _restart(self, why: str) -> Decision | None:
        self._home, self._home_score, self._candidates, self._score = None, -math.inf, [], -math.inf
        self._measure, self._settling = _Measure(), self.config.settle_s
        self.reason = f"{why}: measuring {self._describe((self._b, self._d))}"
        log.info("batching_exploring", reason=why)
        if BATCH_SIZES[self._b] > self._max_batch():
            return self._go((_nearest(BATCH_SIZES, self._max_batch()), self._d), self.reason, measure=True)
        return None

    def _go(self, setting: tuple[int, int], reason: str, measure: bool = True) -> Decision:
        self._b, self._d = setting
        self._measure, self._settling = _Measure(), self.config.settle_s
        if measure:
            self.reason = f"{reason}: measuring {self._describe(setting)}"
        decision = Decision(self.settings, self.reason)
        log.info("batching_decision", max_batch_size=decision.settings.max_batch_size, deadline_ms=decision.settings.deadline_ms, reason=self.reason)
        return decision

    def _neighbours(self, here: tuple[int, int]) -> list[tuple[int, int]]:
        """One grid step along each axis, the direction that last paid first; batch sizes up to the
        connected rows."""
        steps = [(1, 0), (0, 1), (-1, 0), (0, -1)]
        if self._momentum in steps:
            steps.remove(self._momentum)
            steps.insert(0, self._momentum)
        out = []
        for db, dd in steps:
            b, d = here[0] + db, here[1] + dd
            if 0 <= b < len(BATCH_SIZES) and 0 <= d < len(DEADLINES_MS) and BATCH_SIZES[b] <= self._max_batch():
                out.append((b, d))
        return out

    def _max_batch(self) -> int:
        """The smallest grid batch size that holds every connected row."""
        return BATCH_SIZES[_ceil_index(BATCH_SIZES, max(self._rows, 1))]

    def _describe(self, setting: tuple[int, int]) -> str:
        return f"batch {BATCH_SIZES[setting[0]]}, deadline {DEADLINES_MS[setting[1]]:g} ms"

    def _describe_score(self, score: float) -> str:
        return f"p99 {-score:.1f} ms over the target" if score < 0 else f"{score:.0f} steps/s"


def _nearest(grid: tuple[float, ...], value: float) -> int:
    return min(range(len(grid)), key=lambda i: abs(math.log(grid[i]) - math.log(max(value, 1e-6))))


def _ceil_index(grid: tuple[int, ...], value: int) -> int:
    return next((i for i, g in enumerate(grid) if g >= value), len(grid) - 1)
