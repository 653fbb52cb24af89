"""Live training settings through the console page in real headless Chromium: every one of PPO's (acting's too) changed in the
panel, acknowledged with its train step, marked on the charts, in effect at the next train step and read back from
TensorBoard; the page's layout and axes as a newcomer sees them at 1400 px."""

from __future__ import annotations

import json

import pytest

from aioseed.clients.actor import ActorConfig
from aioseed.results.curves import _session_values
from tests.conftest import small_config
from tests.console.test_browser import SCREENSHOTS, _points_at_least, _text_contains, change_through_page, console_beside_actor, markers
from tests.waiting import until

PPO = {"epochs": 2, "minibatches": 2, "ppo_clip": 0.2}
CHANGES = {
    "entropy_cost": 0.03, "ppo_clip": 0.25, "epochs": 3, "minibatches": 4, "lr_frames": 500000, "lr_final_fraction": 0.5,
    "entropy_frames": 400000, "entropy_final_fraction": 0.2, "acting": "bounded", "lag_bound": 2,
}


def tensorboard(logdir, tags: tuple[str, ...]) -> dict[str, list[tuple[float, int, float]]]:
    (events,) = sorted((logdir / "tensorboard").glob("events.out.tfevents.*"))
    return _session_values(events, tags)


async def ticks(page, title: str, axis: str = "yticks") -> list[str]:
    return json.loads(await page.locator(f'.chart[data-chart="{title}"]').get_attribute(f"data-{axis}") or "[]")


async def test_every_ppo_setting_changes_through_the_page_and_the_next_train_step_uses_it(running_learner, tmp_path) -> None:
    config = small_config(tmp_path, metrics_every_s=0.2, log_every_s=0.3, tensorboard=True, impala=PPO)
    async with running_learner(config) as learner:
        actor = ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=16, envs_per_message=16)
        async with console_beside_actor(learner, actor, height=1400) as page:
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.goto(learner.console_url)
            await until(lambda: _points_at_least(page, "losses", 3), "losses plotted")
            # A cleared field is refused naming it: Number("") sent 0, an entropy cost the learner would take.
            await until(page.locator("#training-settings").is_visible, "the training settings panel")
            await page.fill("#live-entropy_cost", "")
            await page.click("#apply-live")
            await until(_text_contains(page, "#message", "400"), "the page to show the refusal")
            assert "entropy_cost" in await page.inner_text("#message")
            assert learner.live.values()["entropy_cost"] == learner.config.impala.entropy_cost
            step = await change_through_page(page, CHANGES)
            assert learner.live.values() == CHANGES and learner.agent.config.minibatches == 4
            ack = await page.inner_text("#live-ack")
            assert f"train step {step}" in ack and "entropy_cost = 0.03" in ack
            await until(lambda: learner.train_steps > step + 3 * 4 * 4, "four train steps of 3 epochs x 4 minibatches")
            for title in ("losses", "entropy cost in effect", "frames/s"):
                await until(lambda title=title: _marked(page, title), f"the change marked on {title}")
            # TensorBoard: the setting as a scalar from the change on, and the loss's own entropy cost after it.
            frames_then = learner.frames
            await until(lambda: _logged_after(tmp_path, frames_then), "summaries written after the change")
            logged = tensorboard(tmp_path, ("settings/entropy_cost", "losses/entropy_cost", "settings/epochs", "settings/acting"))
            assert logged["settings/entropy_cost"][-1][2] == pytest.approx(0.03) and logged["settings/epochs"][-1][2] == 3
            assert logged["settings/acting"][-1][2] == 1  # bounded, the second of async, bounded, synchronous
            assert learner._stages.pacing.mode == "bounded" and learner._stages.pacing.lag_bound == 2
            assert logged["losses/entropy_cost"][-1][2] == pytest.approx(0.03)

            # What a newcomer sees: a grid that fills the width, distinct tick labels, a second axis for the deadline.
            widths = await page.evaluate("[...document.querySelectorAll('#charts .chart:not([hidden])')].map(c => c.clientWidth)")
            page_width = await page.evaluate("document.querySelector('#charts').clientWidth")
            assert len(widths) > 4 and sum(widths[:2]) > 0.6 * page_width  # no empty third of the page
            await until(lambda: _points_at_least(page, "learning rate in effect", 3), "learning rate plotted")
            for title in ("learning rate in effect", "frames/s"):
                labels = [t for t in await ticks(page, title) if t]
                assert labels and len(set(labels)) == len(labels), (title, labels)
            assert await ticks(page, "batching settings", "y2ticks")  # the deadline's own axis, on the right
            SCREENSHOTS.mkdir(exist_ok=True)
            for path in (tmp_path / "console-settings.png", SCREENSHOTS / "console-settings.png"):
                await page.screenshot(path=str(path), full_page=True)
                assert path.stat().st_size > 10_000
            assert errors == []


async def _marked(page, title: str) -> bool:
    return await markers(page, title) >= 1


def _logged_after(logdir, frames: int) -> bool:
    logged = tensorboard(logdir, ("settings/entropy_cost",))["settings/entropy_cost"]
    return bool(logged) and logged[-1][1] > frames
