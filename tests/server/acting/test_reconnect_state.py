"""Over loopback, with R2D2's LSTM: an actor that reconnects to its slot starts from a zero recurrent state and a
fresh unroll, not from the state its dropped stream left (rows may have been lost with the stream)."""

from __future__ import annotations

import grpc
import numpy as np
from tests.conftest import small_config
from tests.waiting import until
from tests.wire import Stream, hello, steps

R2D2 = {"lstm_size": 8, "hidden_sizes": (8,), "burn_in": 1, "replay_capacity": 64, "min_replay_size": 64}
UNROLL = 3  # unrolls of burn_in + T + 1 = 5 rows, overlapping by burn_in + 1 = 2


async def play(stream: Stream, slots: np.ndarray, rows: int, rng: np.random.Generator) -> np.ndarray:
    """Sends ``rows`` steps of one env mid-episode; returns their observations."""
    sent = rng.normal(size=(rows, 1, 4)).astype(np.float32)
    for observation in sent:
        await stream.step(steps(slots, observations=observation))
    return sent[:, 0]


async def test_a_reconnecting_actor_gets_a_zero_state_and_a_fresh_unroll(running_learner, tmp_path) -> None:
    config = small_config(
        tmp_path, agent="r2d2", r2d2=R2D2, training={"unroll_length": UNROLL, "batch_size": 2}, server={"slot_grace_s": 30.0}
    )
    rng = np.random.default_rng(0)
    async with running_learner(config) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        replay = learner._stages.source.replay
        first = Stream(channel)
        slots = await first.handshake(hello(1))
        await play(first, slots, 8, rng)  # two unrolls: rows 0-4, then 3-7 (its first state: after three steps)
        await until(lambda: replay.inserted == 2, "the first stream's two unrolls")
        first.call.cancel()
        await until(lambda: learner.connected_envs == 0, "the dropped stream's slot released")

        again = Stream(channel)
        assert (await again.handshake(hello(1, previous=slots.tolist()))).tolist() == slots.tolist()  # same env, same slot
        resent = await play(again, slots, 5, rng)
        await until(lambda: replay.inserted == 3, "the reconnected stream's first unroll")
    # Stored in insertion order (positions 0, 1, 2), each with the LSTM state and previous action before its first row.
    states = replay._columns["core_h"][:3], replay._columns["core_c"][:3], replay._columns["prev_action"][:3]
    assert replay._columns["prev_action"][1].sum() == 1.0  # one-hot: the action taken at row 2
    for state in states:
        assert not state[0].any() and state[1].any()  # the first stream: from zero, then run on over rows 0-2
        assert not state[2].any()  # the reconnected stream: from zero again, not from the state after row 7
    np.testing.assert_array_equal(replay._columns["observation"][2], resent)  # a fresh unroll of the new rows only
