"""The reporter's last word: at the stop it logs and writes the figures since its last interval."""

from __future__ import annotations

import math

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
