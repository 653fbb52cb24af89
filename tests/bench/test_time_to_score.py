"""``bench time-to-score`` and ``bench presets``: the target's rule, benches that name a preset run exactly it,
and both benches for real on CartPole and Catch."""

from __future__ import annotations

import json
import statistics

import pytest

from aioseed.bench.presets import main as presets_main
from aioseed.bench.recipe_config import PresetsBench, TimeToScoreBench
from aioseed.bench.time_to_score import main as time_to_score_main
from aioseed.cli import parse
from aioseed.errors import InvalidInput
from aioseed.presets import preset
from aioseed.results.curves import Point, reached_and_held


def points(means: list[float], episodes: list[int] | None = None) -> list[Point]:
    return [Point(frames=100 * (i + 1), seconds=float(i), mean_return=m, episodes=None if episodes is None else episodes[i])
            for i, m in enumerate(means)]


def test_the_target_counts_once_it_holds_for_the_next_rows() -> None:
    curve = points([10, 18, 19, 17, 18, 18.5, 20, 19])
    assert reached_and_held(curve, 18.0, hold_rows=3, window=1).frames == 500  # 200 dips at 400; 500 holds to 800
    assert reached_and_held(curve, 18.0, hold_rows=0, window=1).frames == 200  # no hold: the first at the target
    assert reached_and_held(curve, 18.0, hold_rows=4, window=1) is None  # 500's next four rows are not all written yet
    assert reached_and_held(curve[:6], 18.0, hold_rows=3, window=1) is None


def test_rows_over_fewer_episodes_than_the_window_do_not_count() -> None:
    curve = points([20, 20, 20, 20, 20], episodes=[1, 2, 3, 3, 3])
    assert reached_and_held(curve, 18.0, hold_rows=1, window=3).frames == 300
    assert reached_and_held(curve, 18.0, hold_rows=1, window=4) is None


def test_a_bench_that_names_a_preset_runs_exactly_that_preset() -> None:
    """``bench atari --run.preset atari-ppo`` set only the name and ran the bench's own 2 x 32 envs."""
    ppo = preset("atari-ppo")
    for flag in ("--preset", "--run.preset"):
        run = parse(["bench", "atari", flag, "atari-ppo"]).command.run
        assert run.preset == "atari-ppo"
        assert (run.num_actors, run.envs_per_actor, run.envs_per_message) == (ppo.num_actors, ppo.envs_per_actor, ppo.envs_per_message) == (1, 8, 8)
        assert run.learner.training == ppo.learner.training and run.learner.impala == ppo.learner.impala
    acting = parse(["bench", "acting", "--preset", "atari-fast", "--run.learner.impala.epochs", "3"]).command.run
    assert acting.learner.precision == "bfloat16" and acting.learner.impala.epochs == 3  # the flag given wins
    with pytest.raises(InvalidInput, match="--preset applies to"):
        parse(["bench", "transport", "--preset", "atari-ppo"])


def test_time_to_score_starts_from_its_preset_with_flags_on_top() -> None:
    bench = parse(["bench", "time-to-score", "--run.learner.impala.epochs", "3", "--seeds", "4", "5"]).command
    assert isinstance(bench, TimeToScoreBench) and bench.preset == "atari-fast" and bench.seeds == (4, 5)
    assert bench.run.learner.precision == "bfloat16" and bench.run.learner.impala.epochs == 3
    assert str(bench.root) == "logs/time-to-score/ALE-Pong-v5-atari-fast"
    with pytest.raises(SystemExit):
        parse(["bench", "time-to-score", "--seeds", "1", "1"])


def test_time_to_score_runs_each_seed_to_the_target_and_aggregates(tmp_path, capsys) -> None:
    """CartPole to a mean of 60 over 10 episodes, held for 3 rows (written every 0.2 s): each seed's child is
    stopped once it holds, long before its frame budget; a target out of reach within the budget counts as not
    reached, and a used logdir is refused."""
    flags = ["bench", "time-to-score", "--preset", "none", "--logdir", str(tmp_path), "--target-return", "60",
             "--return-window", "10", "--hold-rows", "3", "--poll-s", "1", "--component-s", "0.2", "--json",
             "--max-frames", "20000000", "--seeds", "1", "2", "--run.learner.log-every-s", "0.2"]
    assert time_to_score_main(parse(flags).command) == 0
    *seeds, summary = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [s["seed"] for s in seeds] == [1, 2] and summary["reached"] == "2 of 2"
    for s in seeds:
        assert s["reached"] and 0 < s["frames_to_target"] <= s["frames"] < 20_000_000  # stopped at the target, not the budget
        assert 0 < s["start_up_s"] < s["minutes_to_target"] * 60 and s["frames_per_s"] > 0
        assert (tmp_path / f"seed{s['seed']}" / "curve.png").exists() and (tmp_path / f"seed{s['seed']}.toml").exists()
    assert summary["median_frames_to_target"] == statistics.median(s["frames_to_target"] for s in seeds)
    assert summary["train_core_ms_per_step"] > 0 and summary["bound_frames_per_s"] > 0 and len(summary["ratio_vs_bound"]) == 2
    assert (tmp_path / "report" / "report.json").exists() and (tmp_path / "seeds.png").read_bytes()[:4] == b"\x89PNG"

    with pytest.raises(InvalidInput, match="holds a run already"):
        time_to_score_main(parse(flags).command)

    out_of_reach = ["bench", "time-to-score", "--preset", "none", "--logdir", str(tmp_path / "far"), "--target-return", "500",
                    "--max-frames", "50000", "--seeds", "3", "--component-s", "0", "--json"]
    assert time_to_score_main(parse(out_of_reach).command) == 0
    seed, summary = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert not seed["reached"] and seed["minutes_to_target"] is None and seed["frames"] >= 50_000
    assert summary["reached"] == "0 of 1" and "bound_frames_per_s" not in summary


def test_presets_bench_holds_a_preset_and_an_arm_on_it_and_times_their_parts(capsys) -> None:
    arm = "catch --envs-per-actor 8  --envs-per-message 8"
    bench = PresetsBench(presets=("catch",), arms=(arm,), seconds=3.0, warmup_s=6.0, component_s=0.2, json=True)
    assert presets_main(bench) == 0
    result, other = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert result["preset"] == "catch" and result["env"] == "aioseed/Catch-v0" and result["envs"] == 32
    assert len(result["holds_frames_per_s"]) == 2 and result["frames_per_s"] > 0 and result["ratio_vs_catch"] == 1.0
    assert result["env_core_ms_per_step"] > 0 and result["inference_core_ms_per_step"] > 0 and result["train_core_ms_per_step"] > 0
    assert result["ratio_vs_bound"] == pytest.approx(result["frames_per_s"] / result["bound_frames_per_s"], rel=0.01)
    # The arm is the preset with its flags applied, held beside it and measured against it.
    assert other["arm"] == "catch --envs-per-actor 8 --envs-per-message 8" and other["preset"] == "catch"
    assert other["envs"] == 8 * result["envs"] // 16 and other["envs_per_message"] == 8 and len(other["holds_frames_per_s"]) == 2
    assert other["ratio_vs_catch"] == pytest.approx(other["frames_per_s"] / result["frames_per_s"], rel=0.01)


@pytest.mark.parametrize("arms", [("atari-fast --no-such-flag 1",), ("not-a-preset --num-actors 1",), ("catch", "catch")])
def test_presets_bench_refuses_an_arm_it_cannot_run(arms: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="arm"):
        PresetsBench(presets=("catch",), arms=arms)


def test_presets_bench_refuses_holds_that_cannot_measure() -> None:
    for bad in ({"seconds": 0.0}, {"warmup_s": -1.0}, {"component_s": 0.0}):
        with pytest.raises(ValueError, match="positive"):
            PresetsBench(presets=("catch",), **bad)


def test_the_tail_reads_only_new_events_and_agrees_with_a_whole_read(tmp_path) -> None:
    """The bench polls a growing event file; the tail's curve equals the whole file's at every point."""
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    from aioseed.results.curves import CurveTail, run_curve

    def row(wall_time: float, frames: int, own_mean: float, ended: list[list[float]]) -> event_pb2.Event:
        values = [summary_pb2.Summary.Value(tag="charts/return", tensor=tensor_util.make_tensor_proto(np.float32(own_mean)))]
        if ended:
            values.append(summary_pb2.Summary.Value(tag="charts/episode_returns", tensor=tensor_util.make_tensor_proto(np.array(ended, np.float64))))
        return event_pb2.Event(wall_time=wall_time, step=frames, summary=summary_pb2.Summary(value=values))

    logdir = tmp_path / "run"
    tail = CurveTail(logdir / "tensorboard", window=2)
    assert tail.points() == []  # nothing written yet
    writer = EventFileWriter(str(logdir / "tensorboard"))
    for event in (row(100.0, 10, float("nan"), []), row(102.0, 20, 1.0, [[15, 1.0]]), row(104.0, 30, 2.0, [[25, 3.0]])):
        writer.add_event(event)
    writer.flush()
    first = tail.points()
    assert [(p.frames, p.seconds, p.mean_return) for p in first] == [(20, 2.0, 1.0), (30, 4.0, 2.0)]
    assert first == run_curve(logdir, 2)
    writer.add_event(row(106.0, 40, 5.0, [[33, 5.0], [38, 7.0]]))
    writer.close()
    assert [(p.frames, p.mean_return, p.episodes) for p in tail.points()] == [(20, 1.0, 1), (30, 2.0, 2), (40, 6.0, 2)]
    assert tail.points() == run_curve(logdir, 2)
    # A resumed session (a sweep's retried trial): its own file, replaying frames 30-40 from the checkpoint at 30.
    resumed = EventFileWriter(str(logdir / "tensorboard"), filename_suffix=".resumed")
    for event in (row(200.0, 35, 4.0, [[34, 4.0]]), row(203.0, 50, 9.0, [[45, 9.0]])):
        resumed.add_event(event)
    resumed.close()
    assert len(list((logdir / "tensorboard").glob("events.out.tfevents.*"))) == 2
    assert tail.points() == run_curve(logdir, 2) and tail.start == 100.0
    assert [(p.frames, p.seconds, p.mean_return) for p in tail.points()][-2:] == [(35, 6.0, 4.5), (50, 9.0, 6.5)]  # episodes 33, 34; 34, 45
