"""`bench architectures`' wire cost: a real Steps message and its Actions reply, per env row."""

from __future__ import annotations

import dataclasses

from aioseed.bench.architectures import wire_bytes_per_step
from aioseed.bench.config import atari_run, cartpole_run


def test_wire_bytes_per_step_are_the_rows_payload_plus_framing() -> None:
    cartpole = wire_bytes_per_step(cartpole_run())
    # 4 float32 observation + slot, run_id, reward, flags (17) + a 4-byte action, and a little framing per row.
    assert 16 + 17 + 4 <= cartpole < 16 + 17 + 4 + 4
    pong = wire_bytes_per_step(atari_run())  # the learner stacks frames: one 84x84 frame per row
    assert 84 * 84 + 17 + 4 <= pong < 84 * 84 + 17 + 4 + 4
    stacked = wire_bytes_per_step(dataclasses.replace(atari_run(), learner=dataclasses.replace(atari_run().learner, learner_frame_stack=1)))
    assert 4 * 84 * 84 + 17 + 4 <= stacked < 4 * 84 * 84 + 17 + 4 + 4  # actor-side stacking sends 4x the bytes
