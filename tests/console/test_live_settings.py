"""Live training settings through the console's API, against a real learner and actor on loopback: each change
applies between train steps without a retrace or a dropped stream, and is on the run's record."""

from __future__ import annotations

import asyncio
import json

from aioseed.server.training.live_settings import RECORD
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
        response = await client.post("/api/settings", json={"entropy_cost": 0.05, "ppo_clip": 0.3, "epochs": 3}, headers=AUTH)
        assert response.status == 200, await response.text()
        applied = (await response.json())["applied"]
        assert sorted(applied["changed"]) == ["entropy_cost", "epochs", "ppo_clip"]
        step = applied["train_step"]
        # The next train step's own figures: the entropy cost its loss used, and three epochs of two minibatches.
        await until(lambda: learner.metrics().get("learner/train_steps", 0) > step + 24, "train steps after the change")
        series = learner.series()
        # Snapshots whose whole interval came after the change (each one averages its interval's train steps).
        after = [s for before, s in zip(series, series[1:]) if before["learner/train_steps"] >= step and "losses/entropy_cost" in s]
        assert after and all(abs(s["losses/entropy_cost"] - 0.05) < 1e-6 for s in after)
        assert abs(float(learner.agent.clip_epsilon.numpy()) - 0.3) < 1e-6 and learner.agent.config.epochs == 3
        assert learner.metrics()["settings/ppo_clip"] == 0.3  # and TensorBoard's copy of the snapshot
        assert traces(learner.agent) == compiled  # variables and a Python loop: nothing compiled again
        assert [actor["stream"] for actor in learner.actors()] == streams  # no stream dropped
        entries = record(tmp_path)
        assert [(e["setting"], e["old"], e["new"]) for e in entries] == [("entropy_cost", 0.01, 0.05), ("ppo_clip", 0.2, 0.3), ("epochs", 2, 3)]
        assert all(e["train_step"] == step and e["who"].startswith("console ") and e["frames"] > 0 for e in entries)


async def test_a_change_of_the_kind_of_train_step_is_refused_with_409_and_nothing_moves(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (learner, client):  # one pass per batch: plain V-trace
        before = learner.settings()
        response = await client.post("/api/settings", json={"epochs": 2}, headers=AUTH)
        assert response.status == 409 and "sample reuse" in (await response.json())["error"]
        field = await client.post("/api/settings", json={"entropy_cost": 2}, headers=AUTH)
        assert field.status == 400 and (await field.json())["field"] == "entropy_cost"
        assert learner.settings() == before and record(tmp_path) == []


async def test_two_consoles_at_once_both_recorded_and_the_last_write_wins(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (learner, client):
        first, second = await asyncio.gather(
            client.post("/api/settings", json={"entropy_cost": 0.02}, headers=AUTH),
            client.post("/api/settings", json={"entropy_cost": 0.03}, headers=AUTH),
        )
        assert first.status == second.status == 200
        entries = record(tmp_path)
        assert len(entries) == 2 and entries[0]["new"] == entries[1]["old"]  # each from what the one before left
        assert learner.settings()["training"]["entropy_cost"] == entries[-1]["new"]


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


async def test_a_run_replays_another_runs_changes_at_their_frames_and_a_resumed_run_keeps_its_own(running_learner, tmp_path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    async with console(running_learner, first, impala=PPO) as (learner, client):
        for body in ({"entropy_cost": 0.02}, {"entropy_cost": 0.03, "epochs": 3}):
            assert (await client.post("/api/settings", json=body, headers=AUTH)).status == 200
            at = learner.frames
            await until(lambda: learner.frames > at + 2000, "frames between the changes")
    made = record(first)
    assert [(e["setting"], e["new"]) for e in made] == [("entropy_cost", 0.02), ("entropy_cost", 0.03), ("epochs", 3)]

    # The same timeline again from the record: each change once as many frames are trained, by the schedule.
    async with console(running_learner, second, impala=PPO, settings_schedule=first / RECORD) as (learner, _):
        await until(lambda: len(record(second)) == 3, "the schedule's three changes")
    replayed = record(second)
    assert [(e["setting"], e["old"], e["new"]) for e in replayed] == [(e["setting"], e["old"], e["new"]) for e in made]
    assert all(r["frames"] >= m["frames"] and r["who"] == f"schedule {first / RECORD}" for r, m in zip(replayed, made))

    # The first run resumes from its checkpoint with the settings its record had reached there, and says so.
    async with console(running_learner, first, impala=PPO) as (learner, _):
        assert learner.live.values()["entropy_cost"] == 0.03 and learner.agent.config.epochs == 3
        saved = (first / "config.toml").read_text()
        assert "Live changes (settings/changes.jsonl)" in saved and "epochs = 3" in saved


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
