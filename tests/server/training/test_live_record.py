"""The live settings' record and schedule on their own (no learner): a torn line, a resume's discarded timeline,
a schedule's checked lines and its groups a resumed run already applied, minibatches across devices, and
the learning rate's changes."""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
import pytest

from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.registry import ALGORITHMS
from aioseed.control import CommandFailed, InvalidSetting
from aioseed.server.training.live_settings import LiveSettings
from aioseed.server.training.settings_record import SettingsRecord, read_schedule
from aioseed.server.training.trainer import TrainingConfig

IMPALA = ALGORITHMS["impala"]


def entry(step: int, frames: int, setting: str = "entropy_cost", new: float = 0.02) -> dict:
    return {"time": 0.0, "frames": frames, "train_step": step, "who": "test", "setting": setting, "old": 0.01, "new": new}


def write(path: pathlib.Path, entries: list[dict], tail: str = "") -> SettingsRecord:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + tail)
    return SettingsRecord(path)


def test_a_last_line_cut_short_is_left_out_and_any_other_bad_line_is_named(tmp_path) -> None:
    """A run killed while it appended leaves half a line: the next start must not fail on it."""
    record = write(tmp_path / "changes.jsonl", [entry(10, 100)], tail='{"time": 1.0, "fra')
    assert record.entries() == [entry(10, 100)]
    record = write(tmp_path / "changes.jsonl", [entry(10, 100)], tail='{"time": 1.0, "fra\n' + json.dumps(entry(20, 200)) + "\n")
    with pytest.raises(ValueError, match="changes.jsonl line 2 is not JSON"):
        record.entries()


def test_a_resume_keeps_the_changes_up_to_its_checkpoint_and_moves_the_rest_out(tmp_path) -> None:
    """Checkpoint at step 1000, a change at 1500, killed at 1800: the run resumed from 1000 never made the change at
    1500, and a later resume (from a checkpoint past 1500) must not apply it."""
    record = write(tmp_path / "settings" / "changes.jsonl", [entry(400, 4_000), entry(1_500, 15_000, new=0.5), entry(900, 9_000, new=0.03)])
    kept = record.keep_until(1_000)
    assert [e["train_step"] for e in kept] == [400, 900] and record.entries() == kept  # in train-step order
    discarded = SettingsRecord(tmp_path / "settings" / "changes.discarded.jsonl").entries()
    assert [e["train_step"] for e in discarded] == [1_500]
    assert record.keep_until(1_000) == kept and len(SettingsRecord(tmp_path / "settings" / "changes.discarded.jsonl").entries()) == 1


@pytest.mark.parametrize(
    "line,message",
    [
        ({"frames": "1e6", "setting": "entropy_cost", "new": 0.02}, "frames must be a number >= 0, got '1e6'"),
        ({"frames": None, "setting": "entropy_cost", "new": 0.02}, "frames must be a number >= 0, got None"),
        ({"frames": -5, "setting": "entropy_cost", "new": 0.02}, "frames must be a number >= 0, got -5"),
        ({"frames": math.nan, "setting": "entropy_cost", "new": 0.02}, "frames must be a number >= 0, got nan"),
        ({"frames": True, "setting": "entropy_cost", "new": 0.02}, "frames must be a number >= 0, got True"),
        ({"frames": 10, "setting": ["entropy_cost"], "new": 0.02}, "setting must be a name"),
    ],
)
def test_each_schedule_line_is_checked_before_the_run_starts(tmp_path, line: dict, message: str) -> None:
    """Unchecked, these raised TypeError in the schedule's task, which took the learner down (NaN applied at once)."""
    path = tmp_path / "schedule.jsonl"
    path.write_text(json.dumps({"frames": 5, "setting": "entropy_cost", "new": 0.01}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(InvalidSetting, match=f"schedule.jsonl line 2: {message}"):
        read_schedule(path, IMPALA.live, "impala")


def live_settings(
    minibatches: int = 1, replicas: int = 1, record: SettingsRecord | None = None, applied: list | None = None, rate: object = None
) -> LiveSettings:
    sections = {"training": TrainingConfig(batch_size=32, unroll_length=20), "impala": ImpalaConfig(minibatches=minibatches, epochs=2)}

    async def between_steps(fn):
        return fn()

    return LiveSettings(
        trains=IMPALA, live=IMPALA.live, sections=sections, apply=(applied if applied is not None else []).append,
        between_steps=between_steps, progress=lambda: (0, 0), replicas=replicas, record=record, rate=rate,
    )


async def test_a_change_whose_record_cannot_be_written_is_not_applied(tmp_path) -> None:
    """Applied first, it was in effect but missing from the record (a resume then lost it), and replay and pacing
    never heard of it; now the console gets 500 (CommandFailed) and nothing moved."""
    (tmp_path / "settings").write_text("a file where the record's directory should be")
    applied: list = []
    live = live_settings(record=SettingsRecord(tmp_path / "settings" / "changes.jsonl"), applied=applied)
    with pytest.raises(CommandFailed, match="the change was not applied"):
        await live.change({"entropy_cost": 0.02}, "test")
    assert applied == [] and live.values()["entropy_cost"] == ImpalaConfig().entropy_cost


class Rate:
    """An agent's learning rate, held in float32 as its variable holds it."""

    learning_rate = float(np.float32(5e-4))

    def set_learning_rate(self, value: float) -> None:
        self.learning_rate = float(np.float32(value))


async def test_a_learning_rate_change_is_recorded_first_and_a_resume_takes_the_records_last_rate(tmp_path) -> None:
    """The console's learning rate lives in the agent and its checkpoints, not in the live settings' sections: its
    change goes on the record and the chart markers, an unwritable record refuses it, and a resume takes the
    record's last rate (a change made after a checkpoint at the same train step is not in the checkpoint)."""
    (tmp_path / "settings").write_text("a file where the record's directory should be")
    rate, applied = Rate(), []
    live = live_settings(record=SettingsRecord(tmp_path / "settings" / "changes.jsonl"), applied=applied, rate=rate)
    with pytest.raises(CommandFailed, match="the change was not applied"):
        await live.change_learning_rate(1e-4, "test")
    float32 = float(np.float32(5e-4)), float(np.float32(1e-4))
    assert live.history == [] and rate.learning_rate == float32[0]
    (tmp_path / "settings").unlink()
    await live.change_learning_rate(1e-4, "test")
    await live.change_learning_rate(float32[1], "test")  # what the float32 variable holds: no change
    assert [(e["setting"], e["old"], e["new"]) for e in live.record.entries()] == [("learning_rate", *float32)]
    assert live.history == live.record.entries() and rate.learning_rate == float32[1]
    # Resumed from a checkpoint written at that train step before the change (paused): the record's rate, not the
    # checkpoint's; only the live settings' changes are returned (config.toml lists those).
    rate = Rate()
    again = live_settings(record=live.record, applied=applied, rate=rate)
    assert await again.resume(train_steps=0, frames=100) == [] and applied == []
    assert rate.learning_rate == float32[1]


async def test_a_schedule_replays_a_record_with_learning_rate_changes(tmp_path) -> None:
    """A run's record, replayed by --settings-schedule: the learning rate's lines are checked and applied too."""
    first = live_settings(record=SettingsRecord(tmp_path / "first.jsonl"), rate=Rate())
    await first.change({"entropy_cost": 0.02}, "test")
    await first.change_learning_rate(2e-4, "test")
    (tmp_path / "bad.jsonl").write_text(json.dumps({"frames": 5, "setting": "learning_rate", "new": 2.0}) + "\n")
    with pytest.raises(InvalidSetting, match=r"bad.jsonl line 1: learning_rate must be a number in \(0, 1\]"):
        read_schedule(tmp_path / "bad.jsonl", IMPALA.live, "impala")
    rate = Rate()
    again = live_settings(record=SettingsRecord(tmp_path / "again.jsonl"), rate=rate)
    again.load_schedule(tmp_path / "first.jsonl")
    await again.follow(lambda: 0)
    assert again.values()["entropy_cost"] == 0.02 and rate.learning_rate == float(np.float32(2e-4))
    assert [e["setting"] for e in again.record.entries()] == ["entropy_cost", "learning_rate"]
    # A setting the run refuses at the same frames leaves the rate's line to apply.
    (tmp_path / "refused.jsonl").write_text(
        "".join(json.dumps({"frames": 0, "setting": name, "new": new}) + "\n" for name, new in [("ppo_clip", 0.2), ("learning_rate", 3e-4)])
    )
    again.load_schedule(tmp_path / "refused.jsonl")
    await again.follow(lambda: 0)
    assert again.values()["ppo_clip"] is None and rate.learning_rate == float(np.float32(3e-4))


async def test_a_resumed_run_skips_the_schedule_groups_its_checkpoint_had_applied(tmp_path) -> None:
    """Re-applied, the group at 1M frames would undo the console's change at 3M, which the record restored."""
    live = live_settings()
    live.scheduled = [entry(0, 1_000_000, new=0.005), entry(0, 6_000_000, new=0.001)]
    live.resumed_frames = 5_000_000
    applied = []

    async def change(changes, who):
        applied.append(changes)

    live.change = change  # type: ignore[method-assign]
    await live.follow(lambda: 7_000_000)
    assert applied == [{"entropy_cost": 0.001}]
    live.resumed_frames = None  # a run that started afresh applies every group
    applied.clear()
    await live.follow(lambda: 7_000_000)
    assert applied == [{"entropy_cost": 0.005}, {"entropy_cost": 0.001}]


def test_minibatches_changed_live_must_split_across_the_training_devices() -> None:
    """At launch each minibatch must be a multiple of the devices (check_batch_shares); live, 32 minibatches of
    32 x 20 transitions on 2 devices were accepted, and the next step's split raised in the train thread."""
    live = live_settings(minibatches=4, replicas=2)
    assert live.check({"minibatches": 8})["impala"].minibatches == 8  # 640 / 8 = 80 rows, 40 per device
    with pytest.raises(InvalidSetting, match="each a multiple of the 2 training device"):
        live.check({"minibatches": 128})  # 640 / 128 = 5 rows, not a multiple of 2
    assert live.sections["impala"].minibatches == 4  # nothing moved
