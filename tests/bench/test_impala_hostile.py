"""`bench impala-hostile` at a small scale, through its real processes: a learner and an IMPALA actor
as child processes, the bench playing the stalling, flooding and failing peers. The figures are the
benchmark's; what is asserted here is what must hold at any speed."""

from __future__ import annotations

import math

from aioseed.bench.config import ImpalaHostileBench
from aioseed.bench.impala_hostile import main, measure


async def test_under_each_attack_and_failure_the_actor_goes_on_and_the_learner_holds_only_its_streams(tmp_path) -> None:
    bench = ImpalaHostileBench(
        hidden_sizes=(256, 256),  # 260 KiB: still more than a stalled client's 64 KiB window
        seconds=3.0,
        stalled_connections=4,
        flood_streams=2,
        flood_message_bytes=4 * 2**20,
        stall_s=2.0,
        workdir=tmp_path,
    )
    pulls, flood, stall, restart = await measure(bench)
    assert pulls["pulls_per_s_during"] > 0 and pulls["actor_steps_per_s_during"] > 0
    assert set(pulls["refused_during"]) <= {"RESOURCE_EXHAUSTED"}  # the stalled client's calls past its share
    assert flood["uploads_refused"].get("INVALID_ARGUMENT", 0) >= 1 and set(flood["uploads_refused"]) == {"INVALID_ARGUMENT"}
    assert flood["actor_steps_per_s_during"] > 0 and flood["rss_mib_peak"] >= flood["rss_mib_before"]
    for failure in (stall, restart):
        assert math.isfinite(failure["recovered_s"]), failure  # back to 0.9 of its rate within the bench's 60 s
        assert 1 <= failure["max_streams_after"] <= failure["actor_streams"], failure


def test_the_command_line_prints_one_row_per_test(capsys, monkeypatch) -> None:
    rows = [{"test": "stall", "recovered_s": 2.0}, {"test": "restart", "recovered_s": 5.5}]

    async def fake_measure(config: ImpalaHostileBench) -> list[dict[str, object]]:
        return rows

    monkeypatch.setattr("aioseed.bench.impala_hostile.measure", fake_measure)
    assert main(ImpalaHostileBench(json=True)) == 0
    assert capsys.readouterr().out.splitlines() == ['{"test": "stall", "recovered_s": 2.0}', '{"test": "restart", "recovered_s": 5.5}']
