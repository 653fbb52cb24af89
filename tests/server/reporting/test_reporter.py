"""The reporter's last word: at the stop it logs and writes the figures since its last interval."""

from __future__ import annotations

import asyncio
import math

import numpy as np
from structlog.testing import capture_logs

from aioseed.server.reporting.reporter import Reporter
from aioseed.server.reporting.stats import History


def snapshot(frames: float, lag: float) -> dict[str, float]:
    return {
        "time": frames, "charts/frames": frames, "charts/return": 195.0, "charts/episodes": 3.0,
        "learner/train_steps": 7.0, "batcher/batch_size": math.nan, "learner/policy_lag": lag,
        "charts/eval_return": math.nan,
    }


async def test_final_reports_the_stop_even_within_the_logging_interval() -> None:
    state = {"frames": 0.0, "lag": math.nan}
    written: list[dict[str, float]] = []

    async def write(point: dict[str, float]) -> None:
        written.append(point)

    history = History()
    reporter = Reporter(
        lambda: snapshot(state["frames"], state["lag"]), lambda: int(state["frames"]), history,
        every_s=3600, log_every_s=3600, write=write,
    )
    state.update(frames=1000.0, lag=1.5)  # trained since the last line, which is an hour away
    with capture_logs() as logs:
        await reporter.final()
    [line] = [entry for entry in logs if entry["event"] == "progress"]
    assert (line["frames"], line["lag"], line["train_steps"]) == (1000, 1.5, 7)
    assert "eval_return" not in line and "kl" not in line  # NaN or missing figures stay off the line
    assert written == [history.latest] and history.latest["charts/frames"] == 1000.0


def test_the_progress_line_carries_the_ppo_diagnostics_when_reported() -> None:
    from aioseed.server.reporting.reporter import progress_fields

    point = {**snapshot(10.0, 2.0), "policy/kl_behaviour": 0.00123, "losses/clip_fraction": 0.1234,
             "policy/explained_variance": 0.567, "policy/entropy": 1.7891}
    fields = progress_fields(point, 100.0)
    assert (fields["kl"], fields["clip"], fields["ev"], fields["entropy"]) == (0.0012, 0.123, 0.57, 1.79)


async def test_the_progress_line_averages_the_batch_over_its_whole_interval() -> None:
    # Synchronous acting closes no inference batch while it trains: a metrics window then reads NaN, and
    # the line (every 2 s, windows every 1 s) must not show the last window's NaN for an interval that had some.
    windows = [(1.0, 2.0, 8.0), (2.0, 0.0, math.nan), (3.0, 1.0, 5.0), (4.0, 0.0, math.nan)]
    taken = asyncio.Event()

    def sample() -> dict[str, float]:
        time, batches, size = windows.pop(0)
        if len(windows) == 1:
            taken.set()
        return {**snapshot(10.0, 1.0), "time": time, "batcher/batches": batches, "batcher/batch_size": size}

    reporter = Reporter(sample, lambda: 10, History(), every_s=0.001, log_every_s=3600)
    async with asyncio.TaskGroup() as group:
        task = group.create_task(reporter.run())
        await taken.wait()
        task.cancel()
    with capture_logs() as logs:
        await reporter.final()  # the last window (no batch) closes the interval
    [line] = [entry for entry in logs if entry["event"] == "progress"]
    assert line["batch"] == 7.0  # (2 x 8 + 1 x 5) rows / 3 batches


def test_the_train_step_rate_counts_updates_as_the_train_step_count_does(monkeypatch) -> None:
    """Three train batches of 2 epochs x 4 minibatches in 2 s: 24 updates, 12 a second (it said 1.5: batches)."""
    import time

    from aioseed.server.reporting.stats import Stats

    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    stats = Stats()
    stats.take({"learner/train_steps": 8.0})
    for _ in range(3):
        stats.record_train({}, 0.0)
    clock[0] += 2.0
    snapshot = stats.take({"learner/train_steps": 32.0})
    assert snapshot["learner/train_steps"] == 32.0 and snapshot["learner/train_steps_per_s"] == 12.0


async def test_a_write_held_up_by_the_train_thread_holds_up_no_snapshot() -> None:
    """A TensorBoard write waits for the train step (or a checkpoint) in progress; the snapshots that the console
    and the batching tuner read go on meanwhile, and the writes due meanwhile are left for the newest."""
    from tests.waiting import until

    frames = [0.0]
    released, written = asyncio.Event(), []

    def sample() -> dict[str, float]:
        frames[0] += 1
        return {**snapshot(frames[0], 1.0), "time": frames[0]}

    async def write(point: dict[str, float]) -> None:
        await released.wait()  # the train thread is busy
        written.append(point["time"])

    history = History()
    reporter = Reporter(sample, lambda: int(frames[0]), history, every_s=0.005, log_every_s=0.005, write=write)
    async with asyncio.TaskGroup() as group:
        task = group.create_task(reporter.run())
        await until(lambda: len(history.since(0.0)) >= 20, "snapshots while a write waits")  # before: one, then none
        released.set()
        await until(lambda: len(written) >= 2, "the newest snapshot written")
        task.cancel()
    # The first write took one of the first snapshots; the second is the newest then, not the next in line.
    assert written[0] < 5.0 and written[1] >= 20.0


async def test_a_version_set_from_outside_is_no_train_step(running_learner, tmp_path) -> None:
    """aioseed serve sets the served checkpoint's version; a learner that trains nothing reports no update rate."""
    from tests.conftest import small_config
    from tests.waiting import until

    async with running_learner(small_config(tmp_path, metrics_every_s=0.05)) as learner:
        learner.set_version(5000)
        set_at = learner.metrics().get("time", 0.0)
        await until(lambda: len(learner.series(set_at)) >= 2, "two snapshots")
        rates = [point["learner/train_steps_per_s"] for point in learner.series(set_at)]
        assert rates == [0.0] * len(rates) and learner.metrics()["learner/train_steps"] == 5000  # before: 5000 / interval


def test_an_evaluation_games_right_side_is_not_in_the_evaluation_return() -> None:
    """Each game ends with r on the left and -r on the right (gfootball negates the right side's rewards): the mean
    of both was about 0 however well the learner played."""
    from aioseed.server.reporting.stats import Stats

    stats = Stats()
    stats.record_episodes(np.array([1.0, -1.0, 2.0]), np.array([5, 5, 7]), evaluation=np.array([True, True, False]),
                          right=np.array([False, True, False]))
    snapshot = stats.take()
    assert snapshot["charts/eval_return"] == 1.0 and snapshot["charts/return"] == 2.0  # before: 0.0


def test_the_rows_answered_per_second_count_every_row_evaluation_included() -> None:
    """The batching tuner's throughput: ``aioseed serve`` answers only evaluation rows, which add no frames."""
    from aioseed.server.reporting.stats import Stats

    stats = Stats()
    stats.take()
    stats.record_batch(size=48, fill_s=0.001, inference_s=0.002, frames=0)  # evaluation rows: no frames
    stats.record_batch(size=16, fill_s=0.001, inference_s=0.002, frames=64)
    snapshot = stats.take()
    assert snapshot["charts/frames"] == 64  # 16 rows of 4 frames; as many rows again of evaluation
    assert snapshot["batcher/rows_per_s"] > 0 and math.isclose(snapshot["batcher/rows_per_s"], snapshot["charts/frames_per_s"])


async def test_the_summaries_hold_the_mean_return_the_stop_acted_on() -> None:
    """A CI run stopped on a 20-episode mean of 195 but wrote 193.3 at most: its only summary of the stop came after
    the drain, and an episode that ended in the drain had moved the mean."""
    from aioseed.server.reporting.stats import Stats
    from aioseed.server.stopping import Stopping

    stats = Stats(window=2)
    stopping = Stopping(stats, at_return=195.0)
    written: list[dict[str, float]] = []

    async def write(point: dict[str, float]) -> None:
        written.append(point)

    reporter = Reporter(stats.take, lambda: stats.frames, History(), every_s=3600, log_every_s=3600, write=write)
    stopping.on_request = reporter.mark_stop
    stats.record_batch(size=4, fill_s=0.001, inference_s=0.001, frames=400)
    stats.record_episodes(np.array([190.0, 200.0]), np.array([190, 200]))
    stopping.check(episodes_ended=True)
    stats.record_batch(size=4, fill_s=0.001, inference_s=0.001, frames=4)  # the drain
    stats.record_episodes(np.array([150.0]), np.array([150]))
    await reporter.final()
    assert stopping.reason == "return" and stopping.mean_return == 195.0
    assert [(point["charts/frames"], point["charts/return"]) for point in written] == [(400.0, 195.0), (404.0, 175.0)]
