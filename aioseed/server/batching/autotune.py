"""Inference batching that tunes itself: the most env rows answered per second ("steps/s") under a p99 target.

Method, chosen by measurement (``aioseed bench autotune``): a pattern search on a log grid of
(``max_batch_size``, ``deadline_ms``).

* Scoring. A setting is measured after ``settle_s`` (or 1.5x the old setting's p99: rows queued under
  it are answered meanwhile) and scored by its env steps/s. One that misses the latency target scores
  below any that meets it; among settings that all miss it, steps/s x target/p99 ranks them. The p99
  is that of every message answered while the setting was measured (counted in log buckets), not the
  worst second's: that one grows with the length of the hold and follows the host's hiccups.
* Moves. From home the tuner tries one grid step along both axes together, then along each: batch and
  deadline often pay only together (on CartPole with 64 streams, batch 1 or a sub-ms deadline give ~770
  steps/s whatever the other axis). The direction that last paid goes first. A direction that changed
  nothing (within ``PLATEAU`` or the noise), and ``SCAN`` (both growing) always, is tried two and then
  four steps out, until a move has raised the throughput by ``PLATEAU`` (a plateau crossed); after
  that, steps are single. Batch sizes beyond the first above the connected rows are never tried (they
  all close batches on the deadline alone), nor below the largest message (a batch that splits a
  message answers it only after all its parts: K=32 Pong at batch 2-4 ran at ~60% of batch 32).
* Noise. A candidate becomes home when it beats it by ``margin`` and by twice the standard error of the
  difference, from the per-interval noise pooled over every setting measured (on shared cores the rate
  swings by more than the gains judged). Each candidate gets ``hold_s``; one that is not clearly worse
  near the top, or looks better while crossing a plateau, is held to ``max_hold_s`` for one final look
  (a first-look win must clear 1.25x the bound). A move near the top (gaining under ``STEEP``) holds the
  new home to ``max_hold_s`` before its neighbours: a figure from a few seconds could not tell their
  small gains from the noise. While climbing, a candidate still ahead after its final look, but by
  less than the bound, against a home measured over fewer intervals sends the tuner back to measure
  home to ``max_hold_s``; the two are then judged on all their intervals.
* Holding. When no candidate pays it stays; it re-probes the one-step neighbours after ``reprobe_s``
  (scoring home from its last holds), searches again with long steps when the connected env rows change
  by a quarter (actors join or leave), and with single steps when two holds in a row fall ``drift`` below
  its score (the train step competing for the CPU; one slow hold is the host's noise).

The tuner is pure Python: the learner feeds it one ``Observation`` per metrics interval and applies
the settings it returns; tests drive it with simulated observations.
"""

from __future__ import annotations

import dataclasses
import math

import structlog

from aioseed.server.batching.batcher import BatcherConfig
from aioseed.server.batching.tuner_measure import Measure, Noise, Observation

log = structlog.get_logger()

INFEASIBLE = 1e12
"""Subtracted from the score of settings that miss the latency target (any that meets it scores higher)."""
BATCH_SIZES = tuple(2**k for k in range(13))  # 1 .. 4096 rows
DEADLINES_MS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
PATTERN = (1, 2, 4)
"""Grid steps a candidate may lie from the setting a search starts at: a direction whose candidate
scored within PLATEAU of it is tried twice as far. Once a move has paid, and in re-probes and after a
drift, the steps are single (long steps across a broad optimum would land in its poor surroundings)."""
PLATEAU = 0.1
"""A candidate scoring less than this fraction below home leaves its direction flat (nothing measurable changed)."""
EARLY = 1.25
"""A gain taken at the first look must clear this many times the usual noise bound (two looks at the
same candidate would otherwise take a noisy machine's luck about twice as often)."""
SCAN = (1, 1)
"""Batch and deadline growing together: while crossing a plateau (long steps) this direction is tried
1, 2 and 4 steps out whatever the nearer ones measured. It is the way out of a bad start, and the first
step can measure worse than it is (1,024 streams at batch 1 and 2: the old setting's backlog drains into
the home's figure, and rates at tiny batches swing between two regimes)."""
STEEP = 0.2
"""A move that gained less than this is near the top: the new home is measured to max_hold_s."""
FAR = 4.0
"""A home whose p99 is over this many times the latency target is still on a bad start's plateau: a
throughput gain there does not end the long steps (1,024 streams at batch 1-2: a p99 of 1.3 s; batch
1's first hold once measured a passing low, batch 2 then gained 13% and single steps stayed there)."""


@dataclasses.dataclass(frozen=True)
class BatchingConfig:
    """The inference batching auto-tuner."""

    auto: bool = False
    """Let the tuner choose max_batch_size and deadline_ms (a manual change from the console turns it off)."""
    latency_target_ms: float | None = 50.0
    """Action latency p99 to stay under (None: pure throughput)."""
    hold_s: float = 3.0
    """Seconds each setting is measured at least, after settle_s."""
    max_hold_s: float = 10.0
    """Seconds a candidate that looks better, but not yet surely so, is measured at most."""
    settle_s: float = 1.0
    """Seconds after a change that are not measured (batches of the old setting drain)."""
    margin: float = 0.03
    """A neighbour must beat the current setting by this fraction to be taken (measurement noise)."""
    reprobe_s: float = 120.0
    """Seconds a converged setting is kept before its six neighbours are tried again (each for
    settle_s + hold_s: at 120 s, about 3% of the time at a peak's slightly worse neighbours)."""
    drift: float = 0.2
    """A converged setting whose throughput falls this fraction below its score is explored again."""

    def __post_init__(self) -> None:
        if self.latency_target_ms is not None and not self.latency_target_ms > 0:
            raise ValueError(f"latency_target_ms must be positive or None, got {self.latency_target_ms}")
        if not (0 < self.hold_s <= self.max_hold_s and self.settle_s >= 0 and self.reprobe_s > 0):
            raise ValueError("hold_s and reprobe_s must be positive, max_hold_s >= hold_s, settle_s >= 0")
        if not (0 <= self.margin < 1 and 0 < self.drift < 1):
            raise ValueError("margin must be in [0, 1) and drift in (0, 1)")


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
        self._home_measure = Measure()
        self._rematch: tuple[tuple[int, int], Measure, tuple[tuple[int, int], int]] | None = None
        """(setting, measure, (direction, grid steps)) of a candidate that waits while home is measured again."""
        self._candidates: list[tuple[tuple[int, int], tuple[int, int], int]] = []
        """(setting, direction, grid steps) still to try from home."""
        self._trying: tuple[tuple[int, int], int] = ((0, 0), 0)
        """(direction, grid steps) of the candidate being measured."""
        self._momentum: tuple[int, int] | None = None
        self._measure = Measure()
        self._settling = config.settle_s
        self._converged_for = 0.0
        self._low = 0
        """Consecutive holds of a converged setting that scored ``drift`` below its score."""
        self._recent: list[Measure] = []
        """The last holds of a converged setting, up to max_hold_s of them (its score at a re-probe)."""
        self._longer = False
        """The candidate is measured up to max_hold_s (its first look could not decide)."""
        self._score = -math.inf
        self._rows = 0
        self._message_rows = 1
        self._lengths = PATTERN
        self._home_count = 0
        """Intervals the home setting was measured over."""
        self._noise = Noise()
        self._latency_s = 0.0
        """The last action latency p99 measured, in seconds."""
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
        first, self._rows = not self._rows, observation.connected_rows
        if first and BATCH_SIZES[self._b] > self._max_batch():  # a start above the rows: every candidate lies off range
            return self._restart("starting")
        if observation.message_rows != self._message_rows:
            self._message_rows = observation.message_rows
            if BATCH_SIZES[self._b] < self._min_batch():
                return self._restart(f"streams send {observation.message_rows} rows a message")
        if self._settling > 0:
            self._settling -= observation.seconds
            return None
        self._measure.add(observation)
        if not math.isnan(observation.latency_p99_ms):
            self._latency_s = observation.latency_p99_ms / 1000
        if self.converged:
            return self._watch(observation)
        if self._measure.seconds < (self.config.max_hold_s if self._longer else self.config.hold_s):
            return None
        return self._step(self._measure)

    def _scored(self, measure: Measure) -> float:
        """Steps/s when the latency target is met; otherwise a negative score, so that any setting that
        meets it wins: steps/s scaled by target / p99, shifted below zero. Among settings that all miss
        it (the train step, not the batching, may set the p99), throughput still counts."""
        target, p99 = self.config.latency_target_ms, measure.p99
        if target is not None and p99 > target:
            return measure.steps_per_s * target / p99 - INFEASIBLE
        return measure.steps_per_s

    def _step(self, measure: Measure, pooled: bool = False) -> Decision | None:
        here, score, count = (self._b, self._d), self._scored(measure), len(measure.rates)
        final, self._longer = self._longer, False
        if self._rematch is not None and self._home == here:
            return self._judge_rematch(measure)
        if self._home is None or self._home == here:  # measured the current setting itself (or longer)
            self._score = score
            self._set_home(here, measure)
            self._candidates = self._neighbours()
        else:
            gain, noise = self._gain(score, count)
            if gain > max(self.config.margin, noise if final else EARLY * noise):
                self._take(here, measure, self._trying[0])
                if not final and gain < STEEP:
                    # Taken at the first look, near the top: its figure rests on a few seconds and the next
                    # gains will be small; measure the new home on, to max_hold_s, before its neighbours.
                    self._longer = True
                    return None
                self._candidates = self._neighbours()
            elif not final and gain > self._undecided(noise):
                self._longer = True  # could be better, not yet surely: measure it until max_hold_s
                return None
            elif final and self._lengths == (1,) and gain > 0 and self._home_count < count:
                # Climbing, better by less than the bound, against a home measured over fewer intervals:
                # measure home again, to max_hold_s, and judge the candidate against both of its measures
                # (a home taken at its first look on a large gain rests on hold_s alone).
                self._rematch = (here, measure, self._trying)
                self._noise.add(measure)
                decision = self._go(self._home, f"{self._describe(here)} may beat {self._describe(self._home)}")
                self._longer = True
                return decision
            elif abs(gain) < max(PLATEAU, noise) or self._trying[0] == SCAN:
                self._extend(*self._trying)  # nothing measurable changed this way: look further along it
        if not pooled:
            self._noise.add(measure)
        return self._next()

    def _next(self) -> Decision | None:
        """On to the next candidate, or home when none is left."""
        if not self._candidates:
            return self._settle_home()
        setting, direction, length = self._candidates.pop(0)
        self._trying = (direction, length)
        return self._go(setting, f"trying a neighbour of {self._describe(self._home)}")

    def _set_home(self, setting: tuple[int, int], measure: Measure) -> None:
        self._home, self._home_measure = setting, measure
        self._home_score, self._home_count = self._scored(measure), len(measure.rates)

    def _judge_rematch(self, measure: Measure) -> Decision | None:
        """Home measured again: the waiting candidate is judged against home's measures pooled."""
        setting, candidate, trying = self._rematch
        self._rematch = None
        self._noise.add(measure)
        self._set_home(self._home, Measure.merged([self._home_measure, measure]))
        score = self._scored(candidate)
        gain, noise = self._gain(score, len(candidate.rates))
        if gain > max(self.config.margin, noise):
            self._take(setting, candidate, trying[0])
            self._candidates = self._neighbours()
        return self._next()

    def _take(self, setting: tuple[int, int], measure: Measure, direction: tuple[int, int]) -> None:
        """A candidate becomes home. When its steps/s beat home's by PLATEAU the search is climbing a
        slope now (single steps); a move that won on latency alone, with the throughput flat, is still
        on the plateau (from a bad start, a backlog draining out of the first setting's p99 can make
        the next one win: the scan must go on, or it stays at batch 1-4); so is a move whose p99 is
        still FAR over the target."""
        target = self.config.latency_target_ms
        far = target is not None and measure.p99 > FAR * target
        if measure.steps_per_s >= (1 + PLATEAU) * self._home_measure.steps_per_s and not far:
            self._lengths = (1,)
        self._momentum = direction
        self._set_home(setting, measure)
        self.reason = f"took {self._describe(setting)}: {self._describe_score(self._home_score)}"

    def _extend(self, direction: tuple[int, int], length: int) -> None:
        """Tries next the candidate twice as far along a direction that was flat (a pattern search's
        expanding step), up to the longest of the current lengths."""
        longer = [n for n in self._lengths if n > length]
        if longer:
            self._candidates[:0] = self._along([direction], longer[0])

    @staticmethod
    def _shifted(score: float) -> float:  # scores of settings that miss the target back on their own scale
        return score + INFEASIBLE if score < 0 else score

    def _undecided(self, noise: float) -> float:
        """The gain above which a candidate is measured longer: any while climbing near the top (single
        steps: the gains there are small beside the noise, and a real one measured low once would be
        lost), a positive one while crossing a plateau with long steps."""
        return -noise / 2 if self._lengths == (1,) else 0.0

    def _gain(self, score: float, count: int) -> tuple[float, float]:
        """The candidate's gain over home as a fraction of home's score, and twice its standard error
        (a gain under that is a noisy machine's luck). Meeting the latency target beats missing it
        whatever the throughput; among settings that miss it the score goes as steps/s squared
        (Little's law: p99 ~ rows / steps/s), so its noise doubles."""
        home = self._home_score
        if (score < 0) != (home < 0) or math.isinf(home) or self._shifted(home) <= 0:  # acting stalled: any throughput is a gain
            return (math.inf if score > home else -math.inf), 0.0
        noise = 2 * self._noise.relative_error(count, self._home_count) * (2 if score < 0 else 1)
        return self._shifted(score) / self._shifted(home) - 1, noise

    def _settle_home(self) -> Decision | None:
        home, score = self._home, self._home_score
        self._home, self._score, self._converged_for, self._low, self._recent = None, score, 0.0, 0, []
        self.reason = f"converged on {self._describe(home)}: {self._describe_score(score)}"
        log.info("batching_converged", max_batch_size=BATCH_SIZES[home[0]], deadline_ms=DEADLINES_MS[home[1]], score=round(score, 1))
        if home == (self._b, self._d):
            return None
        return self._go(home, self.reason, measure=False)

    def _watch(self, observation: Observation) -> Decision | None:
        """A converged setting: explore again after ``reprobe_s`` or when its throughput drifts."""
        self._converged_for += observation.seconds
        if self._measure.seconds >= self.config.hold_s:
            now, measure = self._scored(self._measure), self._measure
            self._measure = Measure()
            self._low = self._low + 1 if self._score >= 0 and now < self._score * (1 - self.config.drift) else 0
            if self._low >= 2:  # two holds in a row: a step in the load, not a passing slowdown of the host
                why = f"throughput fell to {self._describe_score(now)} from {self._describe_score(self._score)}"
                return self._restart(why, lengths=(1,))
            if not self._low:
                self._noise.add(measure)
                self._recent = [*self._recent, measure][-math.ceil(self.config.max_hold_s / self.config.hold_s) :]
        if self._converged_for >= self.config.reprobe_s:
            recent = Measure.merged(self._recent)
            decision = self._restart("re-probing the neighbours", lengths=(1,))
            if decision is None and recent.seconds >= self.config.hold_s:
                # Home's last holds measure it already (and longer than one hold: the neighbours' small
                # gains are judged against a steadier figure): on to the neighbours.
                return self._step(recent, pooled=True)
            return decision
        return None

    def _restart(self, why: str, lengths: tuple[int, ...] = PATTERN) -> Decision | None:
        """Searches again from the current setting: after a start or a change of connected rows with
        the pattern's long steps, after a re-probe or a drift one grid step around it."""
        self._home, self._home_score, self._candidates, self._score = None, -math.inf, [], -math.inf
        self._rematch = None
        self._lengths = lengths
        self._measure, self._settling, self._longer = Measure(), self.config.settle_s, False
        self.reason = f"{why}: measuring {self._describe((self._b, self._d))}"
        log.info("batching_exploring", reason=why)
        if not self._min_batch() <= BATCH_SIZES[self._b] <= self._max_batch():
            size = min(max(BATCH_SIZES[self._b], self._min_batch()), self._max_batch())
            return self._go((_nearest(BATCH_SIZES, size), self._d), self.reason, measure=True)
        return None

    def _go(self, setting: tuple[int, int], reason: str, measure: bool = True) -> Decision:
        self._b, self._d = setting
        # Rows queued under the old setting are answered within about its latency (Little's law):
        # until then the p99 is the old setting's, so the settling lasts at least that long.
        self._measure, self._settling = Measure(), max(self.config.settle_s, 1.5 * self._latency_s)
        self._longer = False
        if measure:
            self.reason = f"{reason}: measuring {self._describe(setting)}"
        decision = Decision(self.settings, self.reason)
        log.info("batching_decision", max_batch_size=decision.settings.max_batch_size, deadline_ms=decision.settings.deadline_ms, reason=self.reason)
        return decision

    def _neighbours(self) -> list[tuple[tuple[int, int], tuple[int, int], int]]:
        """One grid step along both axes together (batch and deadline often pay only together: more
        rows need more time to gather), then along each; the direction that last paid first."""
        directions = [(1, 1), (1, 0), (0, 1), (-1, 0), (0, -1), (-1, -1)]
        if self._momentum in directions:
            directions.remove(self._momentum)
            directions.insert(0, self._momentum)
        return self._along(directions, 1)

    def _along(self, directions: list[tuple[int, int]], length: int) -> list[tuple[tuple[int, int], tuple[int, int], int]]:
        """(setting, direction, length) ``length`` steps from home along each direction, on the grid
        and with batch sizes up to the connected rows."""
        b0, d0 = self._home
        out = []
        for db, dd in directions:
            b, d = b0 + db * length, d0 + dd * length
            if 0 <= b < len(BATCH_SIZES) and 0 <= d < len(DEADLINES_MS) and self._min_batch() <= BATCH_SIZES[b] <= self._max_batch():
                out.append(((b, d), (db, dd), length))
        return out

    def _min_batch(self) -> int:
        """The smallest grid batch size that holds a whole message: a smaller batch splits messages, which
        are answered only once all their parts are (more batches, longer waits, nothing gained)."""
        return min(BATCH_SIZES[_ceil_index(BATCH_SIZES, max(self._message_rows, 1))], self._max_batch())

    def _max_batch(self) -> int:
        """The smallest grid batch size above the connected rows. Under such a cap only the deadline
        closes a batch (not the arrival of its last row), so that inference can overlap the slowest
        actors' stepping: on CartPole with 64 streams, 128 / 8 ms measured 10-20% faster than 64 / 8 ms
        on the grid. Every larger cap behaves the same (a batch never holds more than the connected rows)."""
        return BATCH_SIZES[_ceil_index(BATCH_SIZES, self._rows + 1)]

    def _describe(self, setting: tuple[int, int]) -> str:
        return f"batch {BATCH_SIZES[setting[0]]}, deadline {DEADLINES_MS[setting[1]]:g} ms"

    def _describe_score(self, score: float) -> str:
        if score < 0:
            return f"over the latency target ({score + INFEASIBLE:.0f} rows/s x target/p99)"
        return f"{score:.0f} rows/s"


def _nearest(grid: tuple[float, ...], value: float) -> int:
    return min(range(len(grid)), key=lambda i: abs(math.log(grid[i]) - math.log(max(value, 1e-6))))


def _ceil_index(grid: tuple[int, ...], value: int) -> int:
    return next((i for i, g in enumerate(grid) if g >= value), len(grid) - 1)
