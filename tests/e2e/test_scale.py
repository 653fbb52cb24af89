"""Scale smoke: 1,024 concurrent streams for 30 s against one real learner; every stream keeps getting actions."""

from __future__ import annotations

import pytest

from aioseed.bench.load_config import StreamsBench
from aioseed.bench.streams import measure


@pytest.mark.timeout(240)
def test_1024_streams_all_get_actions_and_none_is_starved() -> None:
    row = measure(StreamsBench(streams=1024, baseline_streams=0, seconds=30.0, warmup_s=5.0), 1024)
    assert row["starved_streams"] == 0 and row["min_round_trips"] > 0, row
    assert row["fairness_p99_over_p50"] <= 2.0, row  # no stream is served much more often than the median one
    assert row["train_steps"] > 0, row  # the learner trained while serving them
