"""``bench learning-curve``: the curve spans sessions, counts training time only, and is written as CSV and PNG."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util

from aioseed.bench.config import Bench, LearningCurveBench
from aioseed.bench.learning_curve import curve_title, main, summarize, write_png
from aioseed.cli import parse
from aioseed.results.curves import read_curve, thinned, write_csv
from aioseed.results.scoring import GOAL_RETURNS, scoring_bins


def write_session(directory, points) -> None:
    """One learner session's event file: (wall_time, frames, {tag: value}) as the learner writes them."""
    writer = EventFileWriter(str(directory))
    for wall_time, frames, values in points:
        summary = summary_pb2.Summary(
            value=[
                summary_pb2.Summary.Value(tag=tag, tensor=tensor_util.make_tensor_proto(np.float32(value)))
                for tag, value in values.items()
            ]
        )
        writer.add_event(event_pb2.Event(wall_time=wall_time, step=frames, summary=summary))
    writer.close()


def test_sessions_join_the_later_one_wins_overlaps_and_gaps_are_not_training_time(tmp_path) -> None:
    write_session(tmp_path, [(1000.0, 100, {"charts/return": -21.0}), (1010.0, 200, {"charts/return": -20.0}),
                             (1020.0, 300, {"charts/return": -19.0})])
    # Resumed an hour later from a checkpoint at 150 frames: frames 150..300 are trained again.
    write_session(tmp_path, [(4600.0, 150, {"charts/return": -18.0, "charts/eval_return": -17.0}),
                             (4630.0, 400, {"charts/return": -15.0})])
    points = read_curve(tmp_path)
    assert [p.frames for p in points] == [100, 150, 400]
    assert [p.seconds for p in points] == [0.0, 20.0, 50.0]  # 20 s in the first session, the gap skipped
    assert [p.mean_return for p in points] == [-21.0, -18.0, -15.0]
    assert points[1].eval_return == -17.0 and math.isnan(points[2].eval_return)

    write_csv(points, tmp_path / "curve.csv")
    rows = list(csv.DictReader((tmp_path / "curve.csv").open()))
    assert rows[1] == {"frames": "150", "seconds": "20.0", "mean_return": "-18.000", "eval_return": "-17.000"}
    assert rows[2]["eval_return"] == ""
    write_png(points, tmp_path / "curve.png", "test", 18.0, 1000)
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = summarize(points, target_return=-16.0)
    assert (summary["frames_to_target"], summary["seconds_to_target"], summary["best_return"]) == (400, 50.0, -15.0)


def test_csv_is_thinned_to_a_committable_size_keeping_the_last_point() -> None:
    points = list(range(2000))
    kept = thinned(points, 500)
    assert len(kept) == 500 and kept[0] == 0 and kept[-1] == 1999
    assert thinned(points[:10], 500) == points[:10]


def test_preset_env_and_overrides_on_the_command_line() -> None:
    command = parse(["bench", "learning-curve", "--env", "ALE/Breakout-v5", "--minutes", "5",
                     "--run.learner.impala.entropy-cost", "0.005"])
    assert isinstance(command, Bench) and isinstance(command.command, LearningCurveBench)
    bench = command.command
    run = bench.resolved_run
    assert bench.preset == "atari" and bench.minutes == 5.0
    assert run.learner.env == "ALE/Breakout-v5" and str(run.learner.logdir) == "logs/curves/ALE-Breakout-v5-atari"
    assert run.learner.impala.entropy_cost == 0.005  # the flag given
    assert run.learner.impala.network == "nature_cnn" and run.learner.learner_frame_stack == 4  # the preset's
    catch = parse(["bench", "learning-curve", "--preset", "catch"]).command.resolved_run
    assert catch.learner.env == "aioseed/Catch-v0"


def test_the_title_names_the_protocol_and_the_seed() -> None:
    sticky = parse(["bench", "learning-curve", "--preset", "atari-ppo", "--run.learner.atari.sticky-action-probability",
                    "0.25", "--run.learner.seed", "2"]).command
    assert curve_title(sticky) == "aioseed impala on ALE/Pong-v5 (preset atari-ppo), sticky actions 0.25, seed 2"
    catch = parse(["bench", "learning-curve", "--preset", "catch"]).command
    assert curve_title(catch) == "aioseed impala on aioseed/Catch-v0 (preset catch)"
    one_player = parse(["bench", "learning-curve", "--preset", "football-academy-ppo", "--run.learner.football.left-players", "1"]).command
    assert curve_title(one_player).endswith("(preset football-academy-ppo), controlled players: 1 left, 0 right")


def test_a_football_curve_reports_its_scoring_rate_per_bin_from_every_episode(tmp_path, capsys) -> None:
    """With checkpoint rewards a goal returns 2.0 and no goal at most 1.0: the rate counts the returns above 1.5."""
    logdir = tmp_path / "run"
    episodes = [[50_000, 2.0], [60_000, 0.4], [90_000, 1.0], [150_000, 2.0], [180_000, 2.0], [190_000, 0.9]]
    writer = EventFileWriter(str(logdir / "tensorboard"))
    for wall_time, frames, ended in [(1000.0, 100_000, episodes[:3]), (1010.0, 200_000, episodes[3:])]:
        values = [
            summary_pb2.Summary.Value(tag="charts/return", tensor=tensor_util.make_tensor_proto(np.float32(1.0))),
            summary_pb2.Summary.Value(tag="charts/episode_returns", tensor=tensor_util.make_tensor_proto(np.array(ended, np.float64))),
        ]
        writer.add_event(event_pb2.Event(wall_time=wall_time, step=frames, summary=summary_pb2.Summary(value=values)))
    writer.close()
    command = parse(["bench", "learning-curve", "--preset", "football-academy-simple115", "--plot-only", "--logdir", str(logdir),
                     "--run.learner.football.rewards", "scoring,checkpoints"])
    assert main(command.command) == 0
    result = json.loads(capsys.readouterr().out)
    rows = list(csv.DictReader((logdir / "scoring.csv").open()))
    assert rows == [
        {"frames_from": "0", "frames_to": "100000", "player_episodes": "3", "scoring_rate": "0.333", "mean_return": "1.133"},
        {"frames_from": "100000", "frames_to": "200000", "player_episodes": "3", "scoring_rate": "0.667", "mean_return": "1.633"},
    ]
    assert result["scoring_rate"] == result["best_scoring_rate"] == 2 / 3
    # The scoring reward alone: a goal returns 1.0, so every episode above 0.5 scored.
    assert [b.scoring_rate for b in scoring_bins([(1, 1.0), (2, 0.0), (3, -1.0), (4, 1.0)], GOAL_RETURNS["scoring"], 10)] == [0.5]


def test_the_mean_spans_resumed_sessions_and_the_target_needs_a_full_window(tmp_path, capsys) -> None:
    """The learner's own mean starts over in a resumed session (here its first episode alone, 9.0); the curve's
    is taken over the last 3 episodes of the whole run, and the target counts only once 3 episodes are behind it."""

    def session(wall_time: float, rows: list[tuple[int, float, list[list[float]]]]) -> None:
        writer = EventFileWriter(str(tmp_path / "run" / "tensorboard"))
        for i, (frames, own_mean, ended) in enumerate(rows):
            values = [summary_pb2.Summary.Value(tag="charts/return", tensor=tensor_util.make_tensor_proto(np.float32(own_mean)))]
            if ended:
                episodes = tensor_util.make_tensor_proto(np.array(ended, np.float64))
                values.append(summary_pb2.Summary.Value(tag="charts/episode_returns", tensor=episodes))
            writer.add_event(event_pb2.Event(wall_time=wall_time + i, step=frames, summary=summary_pb2.Summary(value=values)))
        writer.close()

    session(1000.0, [(100, 6.0, [[90, 6.0]]), (200, 4.0, [[150, 2.0]]), (300, 3.0, [[250, 1.0]])])
    session(5000.0, [(400, 9.0, [[350, 9.0]]), (500, 6.0, [[450, 3.0]])])  # resumed from a checkpoint at 300
    command = parse(["bench", "learning-curve", "--preset", "catch", "--plot-only", "--logdir", str(tmp_path / "run"),
                     "--run.learner.return-window", "3", "--target-return", "4"])
    assert main(command.command) == 0
    result = json.loads(capsys.readouterr().out)
    rows = list(csv.DictReader((tmp_path / "run" / "curve.csv").open()))
    assert [(r["frames"], r["mean_return"]) for r in rows] == [
        ("100", "6.000"), ("200", "4.000"), ("300", "3.000"), ("400", "4.000"), ("500", "4.333")
    ]
    # 6.0 at 100 frames rests on one episode, 4.0 at 200 on two: the first full window to reach 4 is at 400.
    assert result["frames_to_target"] == 400 and result["mean_return"] == 13 / 3


def test_a_resume_with_other_settings_is_refused_unless_allowed(tmp_path, capsys) -> None:
    """The first session's config.toml against the flags of the next: a forgotten --return-window 32 would
    change the curve's window halfway. The stop conditions (set per session) may differ."""
    from aioseed.compose import config_file
    from aioseed.errors import InvalidInput

    logdir = tmp_path / "run"
    flags = ["bench", "learning-curve", "--preset", "catch", "--plot-only", "--logdir", str(logdir)]
    first = parse([*flags, "--run.learner.return-window", "32", "--minutes", "5"]).command
    config_file.save(logdir, first.resolved_run, "run")
    write_session(logdir / "tensorboard", [(1000.0, 100, {"charts/return": 0.5})])
    assert main(parse([*flags, "--run.learner.return-window", "32", "--minutes", "9", "--target-frames", "5"]).command) == 0
    with pytest.raises(InvalidInput, match=r"learner.return_window: 32 -> 100"):
        main(parse(flags).command)
    assert main(parse([*flags, "--allow-changed-config"]).command) == 0
