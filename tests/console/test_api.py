"""The console API against a real learner with a real actor on loopback (aiohttp test client)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import pathlib
import shutil

import pytest
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families

from aioseed.clients.actor import Actor, ActorConfig
from aioseed.console import server as console_server
from aioseed.console.api import FEEDS
from tests.conftest import small_config
from tests.waiting import until

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@contextlib.asynccontextmanager
async def console(running_learner, tmp_path, reading_needs_token: bool = False, **overrides):
    config = small_config(tmp_path, metrics_every_s=0.1, console={"enabled": False, **overrides.pop("console", {})}, **overrides)
    async with running_learner(config) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=16, envs_per_message=16))
        task = asyncio.create_task(actor.run())
        app = console_server.init(learner, TOKEN, reading_needs_token, named=config.console.named_tokens())
        async with TestClient(TestServer(app)) as client:
            await until(lambda: "losses/total" in learner.metrics(), "a snapshot taken after a train step")
            try:
                yield learner, client
            finally:
                task.cancel()


async def test_control_needs_the_token_and_reading_is_open_on_loopback(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (learner, client):
        assert (await client.post("/api/pause")).status == 401
        wrong = await client.post("/api/pause", headers={"Authorization": "Bearer nope"})
        assert wrong.status == 401 and "token" in (await wrong.json())["error"]
        assert not learner.paused
        assert (await client.get("/api/metrics")).status == 200
        assert (await client.get("/api/settings")).status == 200


async def test_reading_needs_the_token_off_loopback(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path, reading_needs_token=True) as (_, client):
        for path in ("/api/metrics", "/api/actors", "/api/series", "/api/run", "/metrics"):
            assert (await client.get(path)).status == 401, path
            assert (await client.get(path, headers=AUTH)).status == 200, path
        assert (await client.get("/api/metrics", params={"token": TOKEN})).status == 200
        assert (await client.get("/")).status == 200  # the page itself carries no data


BAD_SETTINGS = [
    ({"max_batch_size": 0}, "max_batch_size"),
    ({"max_batch_size": -4}, "max_batch_size"),
    ({"max_batch_size": 2.5}, "max_batch_size"),
    ({"max_batch_size": "8"}, "max_batch_size must be a finite number"),
    ({"max_batch_size": True}, "max_batch_size must be a finite number"),
    ({"deadline_ms": -1}, "deadline_ms"),
    ({"deadline_ms": 1e9}, "deadline_ms"),
    ({"learning_rate": 0}, "learning_rate"),
    ({"learning_rate": "fast"}, "learning_rate must be a finite number"),
    ({"batch": 8}, "'batch' is not a live setting of impala"),
    ({"max_batch_size": 8, "colour": "red"}, "'colour' is not a live setting of impala; its live settings: entropy_cost, ppo_clip"),
    ({"epsilon_base": 0.1}, "'epsilon_base' is not a live setting of impala (a setting of r2d2)"),
    ({"entropy_cost": -1}, "entropy_cost must be a number in [0, 1], got -1.0"),
    ({"entropy_cost": "high"}, "entropy_cost must be a number in [0, 1], got 'high'"),
    ({"lr_frames": 2.5}, "lr_frames must be an integer in [0, inf], got 2.5"),
    ({}, "expected a JSON object"),
    ([1, 2], "expected a JSON object"),
]


async def test_bad_settings_get_400_saying_what_is_wrong_and_nothing_changes(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (learner, client):
        before = learner.settings()
        for body, message in BAD_SETTINGS:
            response = await client.post("/api/settings", json=body, headers=AUTH)
            assert response.status == 400, body
            assert message in (await response.json())["error"], body
        not_json = await client.post("/api/settings", data=b"{max", headers=AUTH)
        assert not_json.status == 400 and "JSON" in (await not_json.json())["error"]
        # a valid field next to an invalid one is not applied either
        mixed = await client.post("/api/settings", json={"max_batch_size": 4, "deadline_ms": -1}, headers=AUTH)
        assert mixed.status == 400
        missing = await client.post("/api/actors/999/disconnect", headers=AUTH)
        assert missing.status == 404 and "999" in (await missing.json())["error"]
        not_an_id = await client.post("/api/actors/abc/disconnect", headers=AUTH)
        assert not_an_id.status == 400 and "integer" in (await not_an_id.json())["error"]
        assert learner.settings() == before


async def test_max_batch_size_change_limits_the_batches_run(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (learner, client):
        await until(lambda: learner.metrics().get("batcher/batch_size_max") == 16, "full batches of 16")
        response = await client.post("/api/settings", json={"max_batch_size": 4}, headers=AUTH)
        assert response.status == 200 and (await response.json())["staged"]["max_batch_size"] == 4
        await until(lambda: learner.settings()["max_batch_size"] == 4, "the change to take effect")
        changed_at = learner.metrics()["time"]
        await until(lambda: len(learner.series(changed_at)) >= 6, "six more snapshots")
        # The first two intervals may still record batches of 16 closed before the change
        # (the inference pipeline holds at most three closed batches).
        after = [s for s in learner.series(changed_at)[2:] if s["batcher/batches"] > 0]
        assert after and all(s["batcher/batch_size_max"] <= 4 for s in after)
        settings = await (await client.get("/api/settings")).json()
        assert settings["max_batch_size"] == 4


async def test_a_checkpoint_that_cannot_be_written_is_a_500_and_the_run_goes_on(running_learner, tmp_path) -> None:
    """A full disk or a vanished directory: the console gets a JSON 500 naming the failure, the learner trains on
    (the periodic checkpoints used to end its TaskGroup), and once the directory is back, checkpoints work."""
    async with console(running_learner, tmp_path, checkpoint_every_s=0.2) as (learner, client):
        kept = await learner.checkpoint_now()
        shutil.rmtree(tmp_path / "checkpoints")
        (tmp_path / "checkpoints").write_text("not a directory")
        response = await client.post("/api/checkpoint", headers=AUTH)
        assert response.status == 500 and "writing a checkpoint" in (await response.json())["error"]
        at = learner.train_steps
        await until(lambda: learner.train_steps > at + 3, "training to go on, periodic checkpoints failing beside it")
        (tmp_path / "checkpoints").unlink()
        path = (await (await client.post("/api/checkpoint", headers=AUTH)).json())["path"]
        assert path != kept and pathlib.Path(f"{path}.index").exists()


async def test_commands_that_reach_a_stopping_learner_after_its_train_thread_get_409(running_learner, tmp_path) -> None:
    """The train thread goes before the console does: such a command used to be a 500 and a traceback."""
    import concurrent.futures

    async with console(running_learner, tmp_path) as (learner, client):
        learner.pause()  # no train step starts meanwhile
        trainer, gone = learner._trainer, concurrent.futures.ThreadPoolExecutor(1)
        gone.shutdown()
        trainer.executor, kept = gone, trainer.executor  # where a shutdown stands just before the console stops
        try:
            for path, body in (("/api/checkpoint", None), ("/api/settings", {"learning_rate": 1e-4})):
                response = await client.post(path, json=body, headers=AUTH)
                assert response.status == 409 and "stopping" in (await response.json())["error"], path
        finally:
            trainer.executor = kept
            learner.resume()


async def test_pause_resume_learning_rate_checkpoint_and_disconnect(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (learner, client):
        assert (await (await client.post("/api/pause", headers=AUTH)).json())["paused"] is True
        await until(lambda: not learner.step_in_progress, "the step in progress to finish")
        paused_at = learner.train_steps
        await asyncio.sleep(0.5)
        assert learner.train_steps == paused_at
        assert (await (await client.post("/api/resume", headers=AUTH)).json())["paused"] is False
        await until(lambda: learner.train_steps > paused_at + 2, "training to restart")

        configured = learner.agent.learning_rate
        response = await client.post("/api/settings", json={"learning_rate": 3e-4}, headers=AUTH)
        settings = await response.json()
        assert settings["learning_rate"] == pytest.approx(3e-4)
        assert learner.agent.learning_rate == pytest.approx(3e-4)
        # On the run's record and the console's chart markers, beside the live settings' changes.
        (entry,) = [json.loads(line) for line in (tmp_path / "settings" / "changes.jsonl").read_text().splitlines()]
        assert (entry["setting"], entry["old"], entry["who"]) == ("learning_rate", configured, "local")
        assert entry["new"] == pytest.approx(3e-4) and entry["train_step"] > paused_at
        assert [change["setting"] for change in settings["changes"]] == ["learning_rate"]

        path = (await (await client.post("/api/checkpoint", headers=AUTH)).json())["path"]
        assert (tmp_path / "checkpoints").exists() and path.startswith(str(tmp_path))
        run = await (await client.get("/api/run")).json()
        from aioseed import __version__

        assert (run["env"], run["agent"], run["network"], run["version"]) == ("CartPole-v1", "impala", "auto", __version__)
        assert run["devices"] == ["/CPU:0"] and run["logdir"] == str(tmp_path) and run["started"].endswith("+00:00")
        assert run["hyperparameters"]["learning_rate"] == learner.config.impala.learning_rate
        assert run["hyperparameters"]["training.unroll_length"] == learner.config.training.unroll_length
        (kept,) = [c for c in run["checkpoints"] if c["path"] == path]
        step = int(path.rsplit("-", 1)[1])
        assert kept["train_steps"] == step and 0 < kept["frames"] <= learner.frames

        stream = (await (await client.get("/api/actors")).json())[0]["stream"]
        assert (await client.post(f"/api/actors/{stream}/disconnect", headers=AUTH)).status == 200
        await until(lambda: stream not in {a["stream"] for a in learner.actors()}, "the stream to end")


async def test_metrics_endpoint_parses_and_the_feed_pushes_updates(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (learner, client):
        text = await (await client.get("/metrics")).text()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        for name in ("aioseed_charts_frames", "aioseed_charts_frames_per_s", "aioseed_queue_depth", "aioseed_losses_total"):
            assert name in families, name
        assert families["aioseed_charts_frames"].samples[0].value > 0

        async with client.ws_connect("/api/feed", params={"token": TOKEN}) as ws:
            first = json.loads(await ws.receive_str(timeout=5))
            assert first["series"] and first["actors"] and "max_batch_size" in first["settings"]
            times = [first["metrics"]["time"]]
            for _ in range(2):
                times.append(json.loads(await ws.receive_str(timeout=5))["metrics"]["time"])
            assert times == sorted(times) and len(set(times)) == 3


async def test_a_feed_whose_first_send_fails_is_let_go(running_learner, tmp_path, monkeypatch) -> None:
    """A client gone while its history is sent: the handler ends and keeps no reference to the socket."""

    async def gone(self, data: str, compress: int | None = None) -> None:
        raise ConnectionResetError("Cannot write to closing transport")

    async with console(running_learner, tmp_path) as (learner, client):
        monkeypatch.setattr(web.WebSocketResponse, "send_str", gone)
        async with client.ws_connect("/api/feed", params={"token": TOKEN}) as ws:
            assert (await ws.receive(timeout=5)).type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING)
        assert client.server.app[FEEDS] == set()


async def test_evaluation_clips_are_listed_newest_first_and_served(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (learner, client):
        assert await (await client.get("/api/clips")).json() == []  # no videos directory yet
        videos = tmp_path / "videos"
        videos.mkdir()
        for name in ("eval-100-7-000001.mp4", "eval-200-7-000011.mp4", "recording-7-11.partial.mp4", "notes.txt"):
            (videos / name).write_bytes(name.encode())
        listed = await (await client.get("/api/clips")).json()
        assert [c["name"] for c in listed] == ["eval-200-7-000011.mp4", "eval-100-7-000001.mp4"]  # finished clips only
        clip = await client.get("/api/clips/eval-200-7-000011.mp4")
        assert clip.status == 200 and clip.content_type == "video/mp4" and await clip.read() == b"eval-200-7-000011.mp4"
        for name in ("recording-7-11.partial.mp4", "notes.txt", "eval-300-7-000021.mp4", "..%2Fconfig.toml"):
            missing = await client.get(f"/api/clips/{name}")
            assert missing.status == 404 and "no clip named" in (await missing.json())["error"], name
