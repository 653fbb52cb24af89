"""A run's curve: mean (and evaluation) return against env frames, read from its TensorBoard event
files across every session of the run (a resumed run writes one event file per session)."""

from __future__ import annotations

import bisect
import csv
import dataclasses
import itertools
import math
import pathlib
from collections.abc import Iterable
from typing import Any

RETURN_TAG = "charts/return"
EVAL_RETURN_TAG = "charts/eval_return"
EPISODES_TAG = "charts/episode_returns"
"""The training episodes that ended between two summaries: float64[N, 2] tensors of (frames, return)."""
CURVE_TAGS = (RETURN_TAG, EVAL_RETURN_TAG, EPISODES_TAG)

Session = dict[str, list[tuple[float, int, Any]]]
"""One session's event file: (wall_time, step, value) of each tag read."""


@dataclasses.dataclass(frozen=True)
class Point:
    frames: int
    seconds: float
    """Training seconds since the run's first session started (gaps between sessions excluded)."""
    mean_return: float
    eval_return: float = math.nan
    episodes: int | None = None
    """The episodes behind ``mean_return`` when it was taken over the whole run's episodes (``over_episodes``);
    None: the learner's own mean, whose window starts over at each resumed session."""


def _session_values(event_file: pathlib.Path, tags: tuple[str, ...]) -> Session:
    """(wall_time, step, value) of each of ``tags`` in one event file (one learner session); a tensor
    summary's value is its array, an old-style scalar's a float."""
    from tensorboard.backend.event_processing import event_file_loader

    found: Session = {tag: [] for tag in tags}
    _collect(event_file_loader.EventFileLoader(str(event_file)).Load(), found)
    return found


def _collect(events: Iterable[Any], found: Session) -> None:
    """Appends (wall_time, step, value) of each of ``found``'s tags in ``events`` to it."""
    from tensorboard.util import tensor_util

    for event in events:
        for value in event.summary.value:
            if value.tag in found:
                number = tensor_util.make_ndarray(value.tensor) if value.HasField("tensor") else value.simple_value
                found[value.tag].append((event.wall_time, event.step, number))


def run_curve(logdir: pathlib.Path, window: int) -> list[Point]:
    """The run's curve, each mean taken over the last ``window`` episodes of the whole run (its sessions'
    included: the learner's own mean starts over at each session)."""
    files = sorted((logdir / "tensorboard").glob("events.out.tfevents.*"))
    return sessions_curve([_session_values(f, CURVE_TAGS) for f in files], window)


def sessions_curve(sessions: list[Session], window: int) -> list[Point]:
    """``run_curve`` of the sessions' values (in session order): ``over_episodes`` of their points and episodes."""
    return over_episodes(_points(sessions), _episodes(sessions), window)


class CurveTail:
    """A run's curve, as ``run_curve`` reads it, read as it is written: each ``points`` call reads only the
    events added since the last, in every session's event file (a whole read of a long run's files costs
    about a CPU-second here, and grows with the run). ``tags``: scalars kept besides the curve's (``values``)."""

    def __init__(self, tensorboard_dir: pathlib.Path, window: int, tags: tuple[str, ...] = ()) -> None:
        self._directory, self._window, self._tags = tensorboard_dir, window, (*CURVE_TAGS, *tags)
        self._loaders: dict[pathlib.Path, Any] = {}
        self._sessions: dict[pathlib.Path, Session] = {}
        self._read = -1
        self._points: list[Point] = []

    @property
    def start(self) -> float | None:
        """Wall-clock time (seconds since the epoch) of the first row of the first session that wrote one, from
        which a point's ``seconds`` count; None before one is read."""
        first = next((returns for session in self._sessions.values() if (returns := session[RETURN_TAG])), None)
        return float(first[0][0]) if first else None

    def values(self, tag: str) -> list[float]:
        """The values of one of ``tags`` read so far, in session order."""
        return [float(value) for session in self._sessions.values() for _, _, value in session[tag]]

    def points(self) -> list[Point]:
        """As ``run_curve``."""
        from tensorboard.backend.event_processing import event_file_loader

        files = sorted(self._directory.glob("events.out.tfevents.*")) if self._directory.is_dir() else []
        for path in files:
            if path not in self._loaders:
                self._loaders[path] = event_file_loader.EventFileLoader(str(path))
                self._sessions[path] = {tag: [] for tag in self._tags}
            _collect(self._loaders[path].Load(), self._sessions[path])
        read = sum(len(rows) for session in self._sessions.values() for rows in session.values())
        if read != self._read:  # the curve again only where events came
            self._read, self._points = read, sessions_curve([self._sessions[path] for path in files], self._window)
        return self._points


def read_curve(tensorboard_dir: pathlib.Path) -> list[Point]:
    """Mean (and evaluation) return against frames over all sessions' event files, in frame order.

    Where sessions overlap (a resumed session replays the frames after the last
    checkpoint), the later session's points win.
    """
    files = sorted(tensorboard_dir.glob("events.out.tfevents.*")) if tensorboard_dir.is_dir() else []
    return _points([_session_values(f, (RETURN_TAG, EVAL_RETURN_TAG)) for f in files])


def _points(sessions: list[Session]) -> list[Point]:
    points: list[tuple[float, Point]] = []
    elapsed = 0.0
    for scalars in sessions:
        returns = scalars[RETURN_TAG]
        if not returns:
            continue
        start = returns[0][0]
        evaluation = {step: float(value) for _, step, value in scalars[EVAL_RETURN_TAG]}
        for wall_time, frames, value in returns:
            point = Point(
                frames=frames, seconds=elapsed + wall_time - start, mean_return=float(value),
                eval_return=evaluation.get(frames, math.nan),
            )
            points.append((wall_time, point))
        elapsed += returns[-1][0] - start
    kept: list[Point] = []
    for _, point in sorted(points, key=lambda p: p[0], reverse=True):
        if not kept or point.frames < kept[-1].frames:
            kept.append(point)
    return [p for p in reversed(kept) if not math.isnan(p.mean_return)]


def reached_and_held(points: list[Point], target: float, hold_rows: int, window: int) -> Point | None:
    """The first point whose mean return over a full ``window`` of episodes is at least ``target`` and stays
    there for the next ``hold_rows`` points (all of them over full windows too); None while no point has,
    including one that reached it but whose next ``hold_rows`` points are not all written yet."""
    full = [p.episodes is None or p.episodes >= window for p in points]
    above = [ok and p.mean_return >= target for ok, p in zip(full, points)]
    for i, point in enumerate(points):
        if i + hold_rows < len(points) and all(above[i : i + hold_rows + 1]):
            return point
    return None


def episode_returns(tensorboard_dir: pathlib.Path) -> list[tuple[int, float]]:
    """(frames when it ended, return) of every training episode over all sessions, in the order they
    ended. A resumed session's episodes replace those logged before from the frames of its first episode
    on (the old session's episodes between its last checkpoint and that point stay)."""
    files = sorted(tensorboard_dir.glob("events.out.tfevents.*"))
    return _episodes([_session_values(f, (EPISODES_TAG,)) for f in files])


def _episodes(sessions: list[Session]) -> list[tuple[int, float]]:
    episodes: list[tuple[int, float]] = []
    for written in sessions:
        session = [(int(f), float(r)) for _, _, ended in written[EPISODES_TAG] for f, r in ended]
        if session:
            episodes = [e for e in episodes if e[0] < session[0][0]] + session
    return episodes


def over_episodes(points: list[Point], episodes: list[tuple[int, float]], window: int) -> list[Point]:
    """``points`` with each mean return taken again over the last ``window`` episodes of the whole run that had
    ended by its frames (``episode_returns``), and their number. The learner's own mean starts over at each
    resumed session (its window is not checkpointed), so a resumed curve would dip to a few episodes' mean.
    Points before the first episode are dropped; without episodes (runs older than the episode log) the
    points stay as they are."""
    if not episodes:
        return points
    ordered = sorted(episodes, key=lambda e: e[0])
    ends = [frames for frames, _ in ordered]
    sums = [0.0, *itertools.accumulate(r for _, r in ordered)]
    rolled = []
    for point in points:
        count = bisect.bisect_right(ends, point.frames)
        if count:
            first = max(0, count - window)
            mean = (sums[count] - sums[first]) / (count - first)
            rolled.append(dataclasses.replace(point, mean_return=mean, episodes=count - first))
    return rolled


def thinned(points: list[Point], rows: int) -> list[Point]:
    """At most ``rows`` points spread evenly over ``points``, the last one included."""
    if len(points) <= rows:
        return points
    step = len(points) / rows
    return [points[int(i * step)] for i in range(rows - 1)] + [points[-1]]


def write_csv(points: list[Point], path: pathlib.Path, rows: int = 500) -> None:
    """``frames, seconds, mean_return, eval_return`` rows (at most ``rows``: a file small enough to commit)."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["frames", "seconds", "mean_return", "eval_return"])
        for p in thinned(points, rows):
            eval_return = "" if math.isnan(p.eval_return) else f"{p.eval_return:.3f}"
            writer.writerow([p.frames, f"{p.seconds:.1f}", f"{p.mean_return:.3f}", eval_return])


def read_csv(path: pathlib.Path) -> list[Point]:
    """The points ``write_csv`` kept in ``path`` (a committed curve); ValueError names a row that is not one."""
    points = []
    with path.open(newline="") as f:
        rows = csv.DictReader(f)
        if not {"frames", "seconds", "mean_return"} <= set(rows.fieldnames or ()):
            raise ValueError(f"{path} is not a curve: its header is {rows.fieldnames}, not frames, seconds, mean_return, eval_return")
        for number, row in enumerate(rows, 2):
            try:
                eval_return = float(row["eval_return"]) if row.get("eval_return") else math.nan
                points.append(Point(int(row["frames"]), float(row["seconds"]), float(row["mean_return"]), eval_return))
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"{path} row {number} is not a curve point (frames, seconds, mean_return, eval_return): {exc}") from None
    return points
