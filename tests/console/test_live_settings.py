"""Live training settings through the console's API, against a real learner and actor on loopback: each change
applies between train steps without a retrace or a dropped stream, and is on the run's record."""

from __future__ import annotations

import asyncio
import json

from aioseed.server.training.settings_record import RECORD
from tests.console.test_api import AUTH, console
from tests.waiting import until

PPO = {"epochs": 2, "minibatches": 2, "ppo_clip": 0.2}


def record(logdir) -> list[dict]:
    path = logdir / RECORD
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def traces(agent) -> dict[str, int]:
    return {name: getattr(agent, name).experimental_get_tracing_count() for name in ("_targets", "_update")}


async def test_ppo_settings_apply_from_the_next_train_step_without_a_retrace_and_are_recorded(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path, impala=PPO) as (learner, client):
        listed = (await (await client.get("/api/settings")).json())
        assert listed["training"]["entropy_cost"] == 0.01 and listed["training"]["ppo_clip"] == 0.2
        assert {"name": "ppo_clip", "section": "impala", "takes": "a number in (0, 1)"}.items() <= listed["live"][1].items()
        compiled, streams = traces(learner.agent), [actor["stream"] for actor in learner.actors()]
        changes = {"entropy_cost": 0.05, "ppo_clip": 0.3, "epochs": 3, "minibatches": 4}
        response = await client.post("/api/settings", json=changes, headers=AUTH)
        assert response.status == 200, await response.text()
        applied = (await response.json())["applied"]
        assert sorted(applied["changed"]) == ["entropy_cost", "epochs", "minibatches", "ppo_clip"]
        step = applied["train_step"]
        # The next train step's own figures: the entropy cost its loss used, and three epochs of four minibatches.
        def after() -> list[dict[str, float]]:
            """Snapshots whose whole interval came after the change (each one averages its interval's train steps).
            The version counts updates as they apply, and a step's metrics are recorded once it ends: a snapshot taken
            at version ``step`` may still precede the last old step's metrics, one taken after an update of the next
            step cannot."""
            series = learner.series()
            return [s for before, s in zip(series, series[1:]) if before["learner/train_steps"] > step and "losses/entropy_cost" in s]

        await until(lambda: len(after()) >= 2 and learner.train_steps > step + 24, "snapshots of train steps after the change")
        # Variables, a Python loop, and an update traced for any minibatch size: nothing compiled again.
        assert traces(learner.agent) == compiled
        assert all(abs(s["losses/entropy_cost"] - 0.05) < 1e-6 for s in after())
        assert abs(float(learner.agent.clip_epsilon.numpy()) - 0.3) < 1e-6 and learner.agent.config.epochs == 3
        assert learner.metrics()["settings/ppo_clip"] == 0.3  # and TensorBoard's copy of the snapshot
        assert [actor["stream"] for actor in learner.actors()] == streams  # no stream dropped
        entries = record(tmp_path)
        assert [(e["setting"], e["old"], e["new"]) for e in entries] == [
            ("entropy_cost", 0.01, 0.05), ("ppo_clip", 0.2, 0.3), ("epochs", 2, 3), ("minibatches", 2, 4)
        ]
        assert all(e["train_step"] == step and e["who"] == "local" and e["frames"] > 0 for e in entries)  # the console's token


def lags_after(learner, step: int) -> list[float]:
    """The largest policy lag of each snapshot whose train steps all came after ``step``."""
    series = learner.series()
    return [s["learner/policy_lag_max"] for before, s in zip(series, series[1:]) if before["learner/train_steps"] > step and "learner/policy_lag_max" in s]


async def test_the_acting_mode_and_its_lag_bound_change_live_and_hold_the_lag_from_then_on(running_learner, tmp_path) -> None:
    training = {"batch_size": 16, "unroll_length": 8}  # one actor's 16 envs: one train batch per message's unrolls
    async with console(running_learner, tmp_path, impala=PPO, training=training) as (learner, client):
        updates = PPO["epochs"] * PPO["minibatches"]
        listed = (await (await client.get("/api/settings")).json())
        assert {"name": "acting", "section": "training", "takes": "one of async, bounded, synchronous"}.items() <= listed["live"][-2].items()
        pacing, streams = learner._stages.pacing, [actor["stream"] for actor in learner.actors()]
        wrong = await client.post("/api/settings", json={"acting": "lockstep"}, headers=AUTH)
        assert wrong.status == 400 and (await wrong.json())["field"] == "acting"

        async def switch(body: dict, mode: str) -> int:
            response = await client.post("/api/settings", json=body, headers=AUTH)
            assert response.status == 200, await response.text()
            assert pacing.mode == mode
            await until(lambda: learner.metrics()["settings/acting"] == ["async", "bounded", "synchronous"].index(mode), "the gauge")
            # Training goes on (acting never waits forever); the backlog async acting queued (at most 64 + 16 unrolls)
            # trains within the first 6 batches after the switch.
            since = (await response.json())["applied"]["train_step"] + 6 * updates
            await until(lambda: len(lags_after(learner, since)) >= 2, f"snapshots of train steps in {mode} mode")
            return since

        # Synchronous: every batch is trained from the policy that acted it (lag 0 .. updates - 1 over its updates).
        since = await switch({"acting": "synchronous"}, "synchronous")
        assert lags_after(learner, since) and set(lags_after(learner, since)) == {updates - 1}
        # Bounded two batches ahead: the lag stays within three batches of updates.
        since = await switch({"acting": "bounded", "lag_bound": 2}, "bounded")
        assert pacing.lag_bound == 2 and lags_after(learner, since) and max(lags_after(learner, since)) <= 3 * updates - 1
        await switch({"acting": "async"}, "async")
        assert [actor["stream"] for actor in learner.actors()] == streams  # no stream dropped
        assert [(e["setting"], e["old"], e["new"]) for e in record(tmp_path)] == [
            ("acting", "async", "synchronous"), ("acting", "synchronous", "bounded"), ("lag_bound", 1, 2), ("acting", "bounded", "async")
        ]


async def test_a_change_of_the_kind_of_train_step_is_refused_with_409_and_nothing_moves(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (learner, client):  # one pass per batch: plain V-trace
        before = learner.settings()
        response = await client.post("/api/settings", json={"epochs": 2}, headers=AUTH)
        assert response.status == 409 and "sample reuse" in (await response.json())["error"]
        field = await client.post("/api/settings", json={"entropy_cost": 2}, headers=AUTH)
        assert field.status == 400 and (await field.json())["field"] == "entropy_cost"
        # 16 envs connected: a train batch of 32 unrolls would never complete with each env waiting after one.
        stuck = await client.post("/api/settings", json={"acting": "synchronous"}, headers=AUTH)
        assert stuck.status == 409 and "at least training.batch_size = 32 envs connected" in (await stuck.json())["error"]
        assert learner.settings() == before and record(tmp_path) == []


async def test_two_consoles_at_once_both_recorded_by_their_tokens_names_and_the_last_write_wins(running_learner, tmp_path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# who may steer\nalice alices-token-0123456789\nbob   bobs-token-0123456789  # the night shift\n")
    async with console(running_learner, tmp_path / "run", console={"tokens_file": tokens}) as (learner, client):
        first, second = await asyncio.gather(
            client.post("/api/settings", json={"entropy_cost": 0.02}, headers={"Authorization": "Bearer alices-token-0123456789"}),
            client.post("/api/settings", json={"entropy_cost": 0.03}, headers={"Authorization": "Bearer bobs-token-0123456789"}),
        )
        assert first.status == second.status == 200
        entries = record(tmp_path / "run")
        assert len(entries) == 2 and entries[0]["new"] == entries[1]["old"]  # each from what the one before left
        assert {(e["who"], e["new"]) for e in entries} == {("alice", 0.02), ("bob", 0.03)}
        assert learner.settings()["training"]["entropy_cost"] == entries[-1]["new"]
        stranger = await client.post("/api/settings", json={"entropy_cost": 0.04}, headers={"Authorization": "Bearer alices-token"})
        assert stranger.status == 401 and len(record(tmp_path / "run")) == 2


async def test_a_change_during_a_checkpoint_waits_for_it_and_one_while_stopping_gets_409(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (learner, client):
        saved, changed = await asyncio.gather(
            client.post("/api/checkpoint", headers=AUTH), client.post("/api/settings", json={"entropy_cost": 0.04}, headers=AUTH)
        )
        assert saved.status == changed.status == 200 and learner.agent.config.entropy_cost == 0.04
        learner.request_stop()
        late = await client.post("/api/settings", json={"entropy_cost": 0.05}, headers=AUTH)
        assert late.status == 409 and "stopping" in (await late.json())["error"]
        assert [e["new"] for e in record(tmp_path)] == [0.04]


async def test_r2d2s_replay_ratio_and_exploration_change_live(running_learner, tmp_path) -> None:
    r2d2 = {"lstm_size": 8, "hidden_sizes": (8,), "burn_in": 2, "min_replay_size": 8, "replay_capacity": 64}
    async with console(running_learner, tmp_path, agent="r2d2", r2d2=r2d2) as (learner, client):
        response = await client.post("/api/settings", json={"replay_ratio": 8, "epsilon_base": 0.2, "target_update_period": 7}, headers=AUTH)
        assert response.status == 200, await response.text()
        assert learner._stages.source.replay_ratio == 8.0
        assert learner.agent.config.epsilons([0])[0] == 0.2 and learner.agent.config.target_update_period == 7
        wrong = await client.post("/api/settings", json={"entropy_cost": 0.1}, headers=AUTH)
        assert wrong.status == 400 and "a setting of impala" in (await wrong.json())["error"]
        # Acting: async, then paced to the replay ratio again, counting what the replay holds; training goes on.
        pacing = learner._stages.pacing
        for mode in ("async", "replay"):
            assert (await client.post("/api/settings", json={"acting": mode}, headers=AUTH)).status == 200
            steps = learner.train_steps
            await until(lambda: pacing.mode == mode and learner.train_steps > steps + 8, f"train steps with acting {mode}")
        bounded = await client.post("/api/settings", json={"acting": "bounded"}, headers=AUTH)
        assert bounded.status == 400 and "one of async, replay" in (await bounded.json())["error"]


async def test_a_run_replays_another_runs_changes_at_their_frames_and_a_resumed_run_keeps_its_own(running_learner, tmp_path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    async with console(running_learner, first, impala=PPO) as (learner, client):
        for body in ({"entropy_cost": 0.02}, {"entropy_cost": 0.03, "epochs": 3, "acting": "bounded"}):
            assert (await client.post("/api/settings", json=body, headers=AUTH)).status == 200
            at = learner.frames
            await until(lambda: learner.frames > at + 2000, "frames between the changes")
    made = record(first)
    assert [(e["setting"], e["new"]) for e in made] == [("entropy_cost", 0.02), ("entropy_cost", 0.03), ("epochs", 3), ("acting", "bounded")]

    # The same timeline again from the record: each change once as many frames are trained, by the schedule.
    async with console(running_learner, second, impala=PPO, settings_schedule=first / RECORD) as (learner, _):
        await until(lambda: len(record(second)) == 4, "the schedule's four changes")
        # The record is written between train steps in the train thread; the pacing switches on the event loop
        # just after, so the mode is awaited rather than read at once (read at once, it failed once in a batch run).
        await until(lambda: learner._stages.pacing.mode == "bounded", "acting switched to bounded")
    replayed = record(second)
    assert [(e["setting"], e["old"], e["new"]) for e in replayed] == [(e["setting"], e["old"], e["new"]) for e in made]
    assert all(r["frames"] >= m["frames"] and r["who"] == f"schedule {first / RECORD}" for r, m in zip(replayed, made))

    # The first run resumes from its checkpoint with the settings its record had reached there, and says so.
    async with console(running_learner, first, impala=PPO) as (learner, _):
        assert learner.live.values()["entropy_cost"] == 0.03 and learner.agent.config.epochs == 3
        assert learner._stages.pacing.mode == "bounded"
        saved = (first / "config.toml").read_text()
        assert "Live changes (settings/changes.jsonl)" in saved and "epochs = 3" in saved and 'acting = "bounded"' in saved


def test_a_schedule_the_run_cannot_apply_stops_it_before_it_starts(tmp_path) -> None:
    import pytest

    from aioseed.compose.learner import build
    from tests.conftest import small_config

    schedule = tmp_path / "changes.jsonl"
    schedule.write_text('{"frames": 10, "setting": "entropy_cost", "new": 0.1}\n{"frames": 20, "setting": "epsilon_base", "new": 0.1}\n')
    with pytest.raises(ValueError, match="line 2: 'epsilon_base' is not a live setting of impala"):
        build(small_config(tmp_path / "run", settings_schedule=schedule))


async def test_a_scheduled_change_the_run_refuses_is_logged_and_the_schedule_goes_on(running_learner, tmp_path) -> None:
    schedule = tmp_path / "changes.jsonl"
    schedule.write_text(
        '{"frames": 0, "setting": "ppo_clip", "new": 0.2}\n'  # a clip on a one-pass run: refused (409 from a console)
        '{"frames": 1000, "setting": "entropy_cost", "new": 0.05}\n'
    )
    async with console(running_learner, tmp_path / "run", settings_schedule=schedule) as (learner, _):
        await until(lambda: learner.live.values()["entropy_cost"] == 0.05, "the second line applied")
        assert learner.live.values()["ppo_clip"] is None
    assert [(e["setting"], e["new"]) for e in record(tmp_path / "run")] == [("entropy_cost", 0.05)]
