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
