"""The console in real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright)
against a learner with a real actor on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import math
import pathlib
import re
from collections.abc import AsyncIterator

import grpc
import numpy as np
import pytest
from playwright.async_api import Page, async_playwright

from aioseed.clients.actor import Actor, ActorConfig
from aioseed.console.api import FEEDS
from tests.conftest import small_config
from tests.waiting import until
from tests.wire import CARTPOLE, Stream, hello, refused, steps

CHROMIUM = pathlib.Path("/usr/bin/chromium")
SCREENSHOTS = pathlib.Path(__file__).resolve().parents[2] / "test-output"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


async def chart(page: Page, title: str) -> tuple[int, list]:
    box = page.locator(f'.chart[data-chart="{title}"]')
    return int(await box.get_attribute("data-points") or 0), json.loads(await box.get_attribute("data-last") or "[]")


async def change_through_page(page: Page, values: dict) -> int:
    """Fills the training settings panel with ``values`` and applies them: the train step the page says they apply from."""
    await until(page.locator("#training-settings").is_visible, "the training settings panel")
    for name, value in values.items():
        field = f"#live-{name}"
        if await page.eval_on_selector(field, "f => f.tagName") == "SELECT":
            await page.select_option(field, str(value))
        else:
            await page.fill(field, str(value))
    await page.click("#apply-live")
    await until(_text_contains(page, "#live-ack", "Applied from train step"), "the page to acknowledge the change")
    return int(await page.get_attribute("#live-ack", "data-train-step"))


async def markers(page: Page, title: str) -> int:
    """Settings changes the chart ``title`` marks in its time range."""
    return int(await page.locator(f'.chart[data-chart="{title}"]').get_attribute("data-markers") or 0)


@contextlib.asynccontextmanager
async def console_beside_actor(learner, actor: ActorConfig, height: int) -> AsyncIterator[Page]:
    """A blank Chromium page of ``height`` pixels while an actor steps envs against ``learner``."""
    assert CHROMIUM.exists(), "make test installs Debian's chromium"
    task = asyncio.create_task(Actor(actor).run())
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                yield await browser.new_page(viewport={"width": 1400, "height": height})
            finally:
                await browser.close()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_console_charts_update_and_controls_steer_the_learner(running_learner, tmp_path) -> None:
    config = small_config(tmp_path, metrics_every_s=0.2, server={"max_abs_reward": float("inf")})
    async with running_learner(config) as learner:
        actor = ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=16, envs_per_message=16)
        async with console_beside_actor(learner, actor, height=1500) as page:
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.goto(learner.console_url)

            # The charts update: points accumulate and the plotted values change.
            await until(lambda: _points_at_least(page, "frames/s", 3), "three points on the frames/s chart")
            first = await chart(page, "frames/s")
            await until(lambda: _changed(page, "frames/s", first), "the frames/s chart to change")
            # A reconnected feed sends the whole history again: it replaces the charts' points, not adds to them.
            for ws in list(learner.console._runner.app[FEEDS]):
                await ws.close()
            await until(_text_contains(page, "#status", "disconnected"), "the page to see the feed go")
            await until(lambda: len(learner.console._runner.app[FEEDS]) == 1, "the page to reconnect", 1000)
            await until(lambda: _points_at_least(page, "frames/s", 3), "the history plotted again")
            assert (await chart(page, "frames/s"))[0] <= len(learner.series()) + 1
            await until(lambda: _points_at_least(page, "losses", 3), "losses plotted")
            # The policy diagnostics appear once the learner reports them (V-trace does, every train step).
            await until(page.locator('.chart[data-chart="policy drift"]').is_visible, "the policy drift chart")
            await until(lambda: _points_at_least(page, "entropy and gradient norm", 3), "entropy plotted")
            entropy = (await chart(page, "entropy and gradient norm"))[1]
            assert 0.0 < entropy[0] <= math.log(2) + 1e-6  # CartPole's two actions
            await until(lambda: _last_is(page, "entropy cost in effect", config.impala.entropy_cost), "the entropy cost plotted")
            assert await page.locator('.chart[data-chart="entropy cost in effect"]').is_visible()

            # Setting the learning rate in the UI changes the rate in effect, and its chart shows it.
            await page.fill("#learning_rate", "0.0007")
            await page.click("#apply-lr")
            await until(lambda: learner.agent.current_learning_rate == pytest.approx(7e-4), "the rate 7e-4 in effect")
            await until(lambda: _last_is(page, "learning rate in effect", 7e-4), "the chart to show 7e-4")

            # Changing the batch size in the UI changes the batches the learner runs.
            await page.fill("#max_batch_size", "4")
            await page.click("#apply-batching")
            await until(lambda: learner.settings()["max_batch_size"] == 4, "max_batch_size 4 in effect")
            changed_at = learner.metrics()["time"]
            await until(lambda: len(learner.series(changed_at)) >= 6, "six more snapshots")
            after = [s for s in learner.series(changed_at)[2:] if s["batcher/batches"] > 0]
            assert after and all(s["batcher/batch_size_max"] <= 4 for s in after)
            await until(_text_contains(page, "#batching-effect", "in effect: 4 rows"), "the page to show 4 rows")

            # Pause stops the train-step counter; resume restarts it.
            await page.click("#pause")
            await until(_text_contains(page, "#status", "paused"), "the page to show paused")
            assert learner.paused
            await until(lambda: not learner.step_in_progress, "the step in progress to finish")
            paused_at = learner.train_steps
            await asyncio.sleep(0.6)
            assert learner.train_steps == paused_at
            assert "back-pressure" in await page.inner_text("#pause-note")
            await page.click("#resume")
            await until(lambda: learner.train_steps > paused_at + 2, "training to restart")
            await until(_text_contains(page, "#status", "training"), "the page to show training")

            assert await page.locator("#actors tbody tr").count() == 1

            # The run panel: what runs here, and the checkpoint just taken with its frames.
            assert await page.inner_text('dd[data-key="environment"]') == "CartPole-v1"
            await page.click("#checkpoint")
            await until(_text_contains(page, "#checkpoints tbody", "ckpt-"), "the checkpoint listed")
            frames = int((await page.inner_text("#checkpoints tbody tr:first-child td:nth-child(3)")).strip())
            assert 0 < frames <= learner.frames

            # An evaluation actor recording into LOGDIR/videos: the page plays its newest clip.
            evaluator = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=1, envs_per_message=1,
                                          evaluation=True, video_dir=tmp_path / "videos", video_every=1))
            evaluating = asyncio.create_task(evaluator.run())
            await until(page.locator("#clip").is_visible, "the clip panel", 3000)
            source = await page.get_attribute("#clip-video", "src")
            assert "/api/clips/eval-" in source and "token=" in source

            async def clip_loaded() -> bool:  # HAVE_METADATA: Chromium fetched and parsed the MP4
                return await page.evaluate("document.getElementById('clip-video').readyState") >= 1

            await until(clip_loaded, "the browser to load the clip", 1000)
            evaluating.cancel()
            assert not await page.locator('.chart[data-chart="replay (unrolls)"]').is_visible()

            # Skipped non-finite updates show as an alert: with the reward bound off (config), a stream
            # sending rewards of 3e38 makes each update its unrolls take part in overflow.
            assert not await page.locator("#nonfinite").is_visible()
            async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
                hostile = Stream(channel)
                slots = await hostile.handshake(hello(4, run_id_base=900))
                huge = np.full(4, 3e38, np.float32)
                for _ in range(5000):  # an unroll is 21 steps; the first batch holding one is skipped
                    if learner.skipped_nonfinite:
                        break
                    await hostile.step(steps(slots, run_id_base=900, rewards=huge))
                assert learner.skipped_nonfinite > 0
            await until(page.locator("#nonfinite").is_visible, "the page to show the skipped-updates alert")
            assert "update(s) skipped: non-finite loss or gradients" in await page.inner_text("#nonfinite")
            # Refused calls are counted on the page: a hello with the wrong spec is FAILED_PRECONDITION.
            async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
                wrong = dataclasses.replace(CARTPOLE, action_space=7)
                assert (await refused(channel, hello(1, wrong))).code() == grpc.StatusCode.FAILED_PRECONDITION
            await until(_text_contains(page, "#counters", "refused 1 calls"), "the refusal counted on the page")
            SCREENSHOTS.mkdir(exist_ok=True)
            for path in (tmp_path / "console.png", SCREENSHOTS / "console.png"):
                await page.screenshot(path=str(path), full_page=True)
                assert path.stat().st_size > 10_000
            assert errors == []


async def test_r2d2_learner_shows_its_replay(running_learner, tmp_path) -> None:
    from aioseed.presets import preset

    r2d2 = preset("r2d2-cartpole").learner.r2d2
    config = small_config(tmp_path, metrics_every_s=0.2, agent="r2d2", r2d2=r2d2)
    async with running_learner(config) as learner:
        actor = ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=16, envs_per_message=16)
        async with console_beside_actor(learner, actor, height=1500) as page:
            await page.goto(learner.console_url)
            replay = page.locator('.chart[data-chart="replay (unrolls)"]')
            await until(replay.is_visible, "the replay chart to appear")
            # Training starts at min_replay_size; then the page shows the replay filling and being sampled.
            await until(lambda: learner.train_steps >= 3, "three R2D2 train steps")
            await until(lambda: _points_at_least(page, "replay: samples per inserted unroll", 3), "replay ratio plotted")
            size, capacity = (await chart(page, "replay (unrolls)"))[1]
            assert r2d2.min_replay_size <= size <= capacity == r2d2.replay_capacity
            await until(_text_contains(page, "#counters", "sampled"), "replay counters on the page")
            # V-trace learners keep the replay charts hidden (see the test above: no replay metrics).
            # R2D2's live settings through the page: exploration, target period, replay ratio, and acting paced to it.
            values = {
                "epsilon_base": 0.3, "epsilon_alpha": 5, "eval_epsilon": 0.01, "target_update_period": 50, "replay_ratio": 2,
                "acting": "replay",
            }
            step = await change_through_page(page, values)
            assert learner.live.values() == values and learner._stages.source.replay_ratio == 2.0
            assert learner._stages.pacing.mode == "replay"
            assert learner.agent.config.epsilons([0])[0] == pytest.approx(0.3)
            await until(lambda: learner.train_steps > step, "a train step after the change")
            await until(lambda: _marked(page, "replay: samples per inserted unroll"), "the change marked on the replay chart")


async def test_sac_learner_shows_its_critics_and_temperature(running_learner, tmp_path) -> None:
    from aioseed.algos.sac.config import SacConfig

    sac = SacConfig(hidden_sizes=(32, 32), min_replay_size=64, replay_ratio=32.0)
    config = small_config(tmp_path, metrics_every_s=0.2, env="Pendulum-v1", agent="sac", sac=sac, training={"unroll_length": 1, "batch_size": 32})
    async with running_learner(config) as learner:
        actor = ActorConfig(learner=f"127.0.0.1:{learner.port}", env="Pendulum-v1", num_envs=4, envs_per_message=4)
        async with console_beside_actor(learner, actor, height=2200) as page:
            await page.goto(learner.console_url)
            q_values = page.locator('.chart[data-chart="SAC: Q values"]')
            await until(q_values.is_visible, "the SAC Q-value chart to appear")
            await until(lambda: _points_at_least(page, "SAC: temperature and entropy", 3), "alpha plotted")
            # alpha starts at 1 and falls while the entropy is above its target (the first step reports it before its update)
            await until(lambda: learner.train_steps >= 3, "three SAC updates")
            await until(lambda: _last_value_below(page, "SAC: temperature and entropy", 0, 1.0), "alpha below 1 on the page")
            alpha, _ = (await chart(page, "SAC: temperature and entropy"))[1]
            assert 0.0 < alpha < 1.0
            assert (await chart(page, "SAC / TD3: losses"))[1][0] >= 0.0
            assert await page.locator('.chart[data-chart="replay (unrolls)"]').is_visible()
            assert not await page.locator('.chart[data-chart="policy drift"]').is_visible()
            # SAC's live setting, the replay ratio, through the page: sampling follows it.
            await change_through_page(page, {"replay_ratio": 16})
            assert learner._stages.source.replay_ratio == 16.0
            await until(lambda: _marked(page, "SAC / TD3: losses"), "the change marked on the losses chart")
            await page.screenshot(path=str(SCREENSHOTS / "console-sac.png"), full_page=True)


async def test_td3_learner_shows_its_critics_targets_and_both_gradient_norms(running_learner, tmp_path) -> None:
    from aioseed.algos.td3.config import Td3Config

    td3 = Td3Config(hidden_sizes=(32, 32), min_replay_size=64, replay_ratio=32.0)
    config = small_config(tmp_path, metrics_every_s=0.2, env="Pendulum-v1", agent="td3", td3=td3, training={"unroll_length": 1, "batch_size": 32})
    async with running_learner(config) as learner:
        actor = ActorConfig(learner=f"127.0.0.1:{learner.port}", env="Pendulum-v1", num_envs=4, envs_per_message=4)
        async with console_beside_actor(learner, actor, height=2200) as page:
            await page.goto(learner.console_url)
            await until(lambda: learner.train_steps >= 3, "three TD3 train steps")
            await until(lambda: _points_at_least(page, "TD3: Q values", 3), "TD3's Q values plotted")
            for series, name in enumerate(("critics'", "policy's")):
                await until(lambda: _last_value_at_least(page, "SAC / TD3: gradient norms", series, 1e-9), f"the {name} gradient norm plotted")
            # No temperature: SAC's chart of it stays hidden.
            assert not await page.locator('.chart[data-chart="SAC: temperature and entropy"]').is_visible()


async def test_self_play_learner_shows_its_opponents_version_and_each_sides_return(running_learner, tmp_path) -> None:
    from aioseed.envs.football import FootballConfig
    from aioseed.server.config import SelfPlayConfig

    football = FootballConfig(representation="simple115v2", left_players=1, right_players=1)
    config = small_config(
        tmp_path, metrics_every_s=0.2, env="football:academy_empty_goal_close", football=football,
        self_play=SelfPlayConfig(opponent="frozen", refresh_frames=100), training={"unroll_length": 8, "batch_size": 4},
    )
    async with running_learner(config) as learner:
        actor = ActorConfig(learner=f"127.0.0.1:{learner.port}", env=config.env, football=football, num_envs=4, envs_per_message=4)
        async with console_beside_actor(learner, actor, height=1500) as page:
            await page.goto(learner.console_url)
            # The actor is already stepping, so the first version shown may already be a refreshed one.
            await until(_text_contains(page, "#counters", "opponent: version"), "the first opponent on the page")
            first = await _opponent_version(page)
            # A refresh every 100 frames: the page names the newer copy of the policy the right side plays.
            await until(lambda: learner.train_steps >= 2, "two train steps")
            await until(_opponent_newer_than(page, first), "a refreshed opponent on the page")
            # The academy's episodes end within seconds: the right side's mean return is plotted apart.
            await until(lambda: _series_reported(page, "episode return", 3), "the right side's return plotted", 600)


async def test_one_policy_per_side_charts_the_right_networks_losses(running_learner, tmp_path) -> None:
    from aioseed.envs.football import FootballConfig
    from aioseed.server.config import SelfPlayConfig

    football = FootballConfig(representation="simple115v2", left_players=1, right_players=1)
    config = small_config(
        tmp_path, metrics_every_s=0.2, env="football:academy_empty_goal_close", football=football,
        self_play=SelfPlayConfig(opponent="separate"), training={"unroll_length": 8, "batch_size": 4},
    )
    async with running_learner(config) as learner:
        actor = ActorConfig(learner=f"127.0.0.1:{learner.port}", env=config.env, football=football, num_envs=4, envs_per_message=4)
        async with console_beside_actor(learner, actor, height=2000) as page:
            await page.goto(learner.console_url)
            right = page.locator('.chart[data-chart="right side: losses"]')
            await until(right.is_visible, "the right side's loss chart to appear")
            totals: list[float] = []

            async def both_plotted() -> bool:  # one page read, so both come from the same point
                totals[:] = await page.evaluate(
                    """() => ["losses", "right side: losses"].map(
                        (title) => JSON.parse(document.querySelector(`.chart[data-chart="${title}"]`).dataset.last || "[]")[0])"""
                )
                return all(isinstance(value, float | int) and math.isfinite(value) for value in totals)

            await until(both_plotted, "both networks' total losses plotted")
            assert totals[0] != totals[1]  # two networks on their own sides' unrolls, not one series twice


async def _opponent_version(page: Page) -> int:
    found = re.search(r"opponent: version (\d+)", await page.inner_text("#counters"))
    assert found is not None, "the counters name no opponent"
    return int(found.group(1))


def _opponent_newer_than(page: Page, version: int):
    async def check() -> bool:
        return await _opponent_version(page) > version

    return check


async def _series_reported(page: Page, title: str, series: int) -> bool:
    value = (await chart(page, title))[1][series]
    return value is not None and math.isfinite(value)


async def _points_at_least(page: Page, title: str, n: int) -> bool:
    return (await chart(page, title))[0] >= n


async def _last_is(page: Page, title: str, value: float) -> bool:
    return (await chart(page, title))[1] == [pytest.approx(value)]


async def _changed(page: Page, title: str, first: tuple[int, list]) -> bool:
    now = await chart(page, title)
    return now[0] > first[0] and now[1] != first[1]


def _text_contains(page: Page, selector: str, text: str):
    async def check() -> bool:
        return text in await page.inner_text(selector)

    return check


pytestmark = pytest.mark.e2e


async def test_the_auto_tuner_at_work_and_a_manual_change_turning_it_off(running_learner, tmp_path) -> None:
    config = small_config(
        tmp_path,
        metrics_every_s=0.2,
        batcher={"max_batch_size": 1, "deadline_ms": 0.1},
        # From batch 1 its first move tries batch 2 and holds it 2.5 s, whether or not it then stays (on a
        # loaded machine the actor, not the batch, may bound throughput); a target every setting meets.
        batching={"auto": True, "hold_s": 2.0, "settle_s": 0.5, "latency_target_ms": 1000.0},
    )
    async with running_learner(config) as learner, async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        task = None
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1700})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.goto(learner.console_url)
            # The switch is on, the page says what the tuner does and why, and its choices are charted.
            await until(page.locator("#auto").is_checked, "the auto switch to show on")
            await until(_text_contains(page, "#auto-reason", "p99 target 1000 ms"), "the tuner's target on the page")
            # Only now the rows the tuner measures arrive (it waits for connected rows), so the page sees its first move.
            actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=16, envs_per_message=1))
            task = asyncio.create_task(actor.run())
            await until(lambda: learner.settings()["max_batch_size"] > 1, "the tuner to try a larger batch", 3000)
            await until(lambda: _last_value_at_least(page, "batching settings", 0, 2), "the chart to show its choice")
            assert (await chart(page, "batch fill and action latency (ms)"))[1][-1] == 1000.0  # the target line
            SCREENSHOTS.mkdir(exist_ok=True)
            await page.screenshot(path=str(SCREENSHOTS / "console-autotune.png"), full_page=True)
            # A manual change turns auto off, and the page says so (whatever deadline the tuner left in the form).
            await page.fill("#max_batch_size", "8")
            await page.click("#apply-batching")
            await until(_text_contains(page, "#auto-reason", "auto off: a manual change"), "the page to say auto is off")
            assert not learner.batching_auto and not await page.locator("#auto").is_checked()
            # The switch turns it back on.
            await page.click("#auto")
            await until(lambda: learner.batching_auto, "auto on again")
            assert errors == []
        finally:
            await browser.close()
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


async def _last_value_below(page: Page, title: str, series: int, value: float) -> bool:
    values = (await chart(page, title))[1]
    return bool(values) and values[series] is not None and values[series] < value


async def _marked(page: Page, title: str) -> bool:
    return await markers(page, title) >= 1


async def _last_value_at_least(page: Page, title: str, series: int, value: float) -> bool:
    values = (await chart(page, title))[1]
    return bool(values) and values[series] is not None and values[series] >= value
