"""Several controlled players and self-play through learner and actor processes, against the real gfootball engine:
the frozen opponent refreshes, survives a restart through the checkpoint, and every player is evaluated; with one
policy per side, each side's network trains, resumes and acts for its own players."""

from __future__ import annotations

import json
import re
import signal

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util
from tests.processes import Process

import aioseed

SCENARIO = "football:academy_3_vs_1_with_keeper"
FOOTBALL = ["--football.representation", "simple115v2", "--football.left-players", "2", "--football.right-players", "1"]


async def serve_until(learner_args: list[str], pattern: str) -> Process:
    """A learner and one actor of 2 games (6 rows), until the learner logs ``pattern``; then SIGTERM."""
    learner = await Process(["learner", "--server.host", "127.0.0.1", "--server.port", "0", "--console.port", "0", *learner_args]).start()
    actor = None
    try:
        port = int((await learner.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        actor = await Process(
            ["actor", "--learner", f"127.0.0.1:{port}", "--env", SCENARIO, "--num-envs", "2", "--envs-per-message", "2", *FOOTBALL]
        ).start()
        await learner.wait_for_line(r"stream_connected .*slots=6")
        await learner.wait_for_line(pattern, timeout_s=240)
        learner.signal(signal.SIGTERM)
        assert await learner.wait() == 0
        assert learner.errors() == [], learner.log
        return learner
    finally:
        learner.kill()
        if actor is not None:
            actor.kill()


async def test_self_play_refreshes_its_opponent_resumes_it_and_evaluates_every_player(tmp_path) -> None:
    args = ["--env", SCENARIO, "--logdir", str(tmp_path), "--log-every-s", "0.5", "--training.unroll-length", "8",
            "--training.batch-size", "4", "--self-play.opponent", "frozen", *FOOTBALL]
    first = await serve_until([*args, "--self-play.refresh-frames", "400"], r"opponent_refreshed .*version=([1-9]\d*)")
    log = "\n".join(first.lines)
    assert "obs float32[115], 19 actions, 2 left + 1 right players/env" in log
    refreshed = [int(v) for v in re.findall(r"opponent_refreshed .*version=(\d+)", log)]
    shown = [int(v) for v in re.findall(r"progress .*opponent=(\d+)", log)]
    assert shown and shown[-1] == refreshed[-1], "the progress line shows the opponent's version"
    # Restarted (and refreshing no more), the learner plays on against the opponent its checkpoint kept, not
    # against a fresh copy of the policy.
    second = await serve_until([*args, "--self-play.refresh-frames", "1000000000"], r"progress .*opponent=\d+")
    log = "\n".join(second.lines)
    assert "checkpoint_restored" in log
    assert int(re.search(r"progress .*opponent=(\d+)", log).group(1)) == refreshed[-1]

    process = await Process(["eval", "--logdir", str(tmp_path), "--episodes", "2", "--format", "json"]).start()
    assert await process.wait(timeout_s=120) == 0, process.log
    evaluation = json.loads(await process.stdout())
    assert evaluation["players"] == [2, 1]
    assert len(evaluation["returns"]) == 4 and len(evaluation["right_returns"]) == 2  # a return per player and episode
    # Games, not player rows: the first left player's return of each game says whether the left side scored.
    assert evaluation["scoring_rate"] == np.mean([r > 0.5 for r in evaluation["returns"][0::2]])


async def test_one_policy_per_side_trains_each_on_its_rows_resumes_and_acts_for_each_side(tmp_path) -> None:
    args = ["--env", SCENARIO, "--logdir", str(tmp_path), "--log-every-s", "0.5", "--metrics-every-s", "0.5",
            "--training.unroll-length", "8", "--training.batch-size", "4", "--self-play.opponent", "separate", *FOOTBALL]
    await serve_until(args, r"progress .*train_steps=[1-9]\d")
    # Each side's network trained: the left side's losses, and the right side's under right/.
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"tensors": 0})
    events.Reload()
    for tag in ("losses/total", "right/losses/total"):
        values = [float(tensor_util.make_ndarray(e.tensor_proto)) for e in events.Tensors(tag)]
        assert values and all(np.isfinite(values)), tag

    second = await serve_until(args, r"progress .*train_steps=\d+")
    assert "checkpoint_restored" in "\n".join(second.lines)  # both networks and optimizers came back

    # A checkpoint's acting answers each row with its side's network: greedy, the right rows take the right
    # network's most likely action.
    policy = aioseed.load_policy(tmp_path, greedy=True)
    observations = np.random.default_rng(0).uniform(-1, 1, (6, 115)).astype(np.float32)  # 2 games of 2 + 1 players
    actions, _ = policy.act(observations)
    right = policy.spec.right_side(6)
    for rows, network in ((~right, policy.agent.left), (right, policy.agent.right)):
        logits = network.policy.greedy(observations[rows])["logits"].numpy()
        assert actions[rows].tolist() == logits.argmax(-1).tolist()

    process = await Process(["eval", "--logdir", str(tmp_path), "--episodes", "2", "--format", "json"]).start()
    assert await process.wait(timeout_s=120) == 0, process.log
    evaluation = json.loads(await process.stdout())
    assert len(evaluation["returns"]) == 4 and len(evaluation["right_returns"]) == 2
