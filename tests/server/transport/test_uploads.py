"""IMPALA mode's unroll uploads: every malformed message is refused before anything is queued, and
parameter chunks are checked against the actor's network."""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import AsyncIterator, Callable

import numpy as np
import pytest

from aioseed.action_space import Discrete
from aioseed.impala_actor.actor import upload_message
from aioseed.impala_actor.params import ParamsError, receive_params
from aioseed.proto import aioseed_pb2 as pb
from aioseed.server.transport.params import ParamsPublisher
from aioseed.server.transport.protocol import ProtocolError, RowBounds, checked
from aioseed.server.transport.upload_history import UploadHistory
from aioseed.server.transport.uploads import UnrollParser, Upload
from aioseed.types import step_columns

T = 3
COLUMNS = {
    **step_columns((4,), np.float32),
    "action": ((), np.int32),
    "logits": ((2,), np.float32),
    "core_h": ((8,), np.float32),
}
SLOTS = np.array([7, 9], np.int32)


def parser(history: UploadHistory | None = None) -> UnrollParser:
    """A stream's parser of SLOTS, on ``history`` (the learner's, which its streams share), or on one of its own."""
    return UnrollParser(
        columns=COLUMNS, per_unroll=["core_h"], unroll_length=T, slots=SLOTS, space=Discrete(2), bounds=RowBounds(100.0, 1e6),
        history=history,
    )


def unrolls(count: int = 2) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    columns = {
        name: (rng.normal(size=(count, *shape)) if name == "core_h" else rng.normal(size=(count, T + 1, *shape))).astype(dtype)
        for name, (shape, dtype) in COLUMNS.items()
        if np.dtype(dtype).kind == "f"
    }
    steps = (count, T + 1)
    phantom = np.zeros(steps, bool)
    phantom[0, 2] = True  # an episode ends (terminated, with its final observation) and the next starts
    done = phantom.copy()
    done[0, 3] = True
    return {
        **columns,
        "done": done,
        "phantom": phantom,
        "version": np.full(steps, 3, np.int64),
        "action": rng.integers(0, 2, steps).astype(np.int32),
        "slot": np.arange(count, dtype=np.int32),
    }


def test_a_valid_upload_parses_to_the_actors_arrays() -> None:
    sent = unrolls()
    upload = parser().parse(upload_message(sent, SLOTS[::-1], [1.5], [12]), newest_version=3)
    assert [int(u["slot"]) for u in upload.unrolls] == [9, 7]
    for i, unroll in enumerate(upload.unrolls):
        for name in COLUMNS:
            np.testing.assert_array_equal(unroll[name], sent[name][i])
            assert unroll[name].dtype == np.dtype(COLUMNS[name][1])
    # The episode that ended began before this stream's first unroll: the learner did not see it whole,
    # so it reports nothing, whatever the actor claims.
    assert upload.episode_returns.tolist() == [] and upload.episode_lengths.tolist() == []
    assert upload.env_steps == 2 * T - 1  # steps 1..T of each unroll, less one phantom


def following(previous: dict[str, np.ndarray], rewards: list[float], phantom_at: int | None = None) -> dict[str, np.ndarray]:
    """The next unrolls of the same slots: step 0 repeats the previous last step."""
    sent = unrolls()
    for name in sent:
        if name not in ("core_h", "slot"):
            sent[name][:, 0] = previous[name][:, -1]
    sent["done"][:, 1:] = False
    sent["phantom"][:, 1:] = False
    sent["reward"][0, 1:] = rewards
    if phantom_at is not None:
        sent["done"][0, phantom_at] = sent["phantom"][0, phantom_at] = True
    return sent


def queued(stream: UnrollParser, message: pb.ActorMessage) -> Upload:
    """``message`` parsed, and its unrolls taken in as ``Uploads.receive`` does once each is queued."""
    upload = stream.parse(message, newest_version=3)
    for taken in upload.taken:
        stream.history.commit(taken)
    return upload


def test_the_learner_sums_episodes_from_the_steps_across_unrolls_and_ignores_the_reported_figures() -> None:
    stream = parser()
    first = unrolls()
    first["reward"][0, 3] = 0.0  # the new episode's first observation, after the phantom at step 2
    queued(stream, upload_message(first, SLOTS, [], []))
    second = following(first, [1.0, 2.0, 0.5])
    assert queued(stream, upload_message(second, SLOTS, [], [])).episode_returns.tolist() == []
    third = following(second, [4.0, 8.0, 1.0], phantom_at=3)
    # A forged figure that passes the format checks (|return| <= 100 x length) changes nothing.
    upload = queued(stream, upload_message(third, SLOTS, [99.0], [1]))
    assert upload.episode_returns.tolist() == [1.0 + 2.0 + 0.5 + 4.0 + 8.0 + 1.0]
    assert upload.episode_lengths.tolist() == [6]  # steps 1..3 twice (the final row counts, as in SEED mode)


def test_an_episode_starting_at_a_streams_first_step_is_reported_whole() -> None:
    """Step 0 done (a reset row, or a terminated row carrying the next episode's first observation): the
    episode from there on was seen from its start."""
    sent = unrolls()
    sent["phantom"][:] = sent["done"][:] = False
    sent["done"][0, 0] = True
    sent["done"][0, 3] = sent["phantom"][0, 3] = True
    sent["reward"][0] = [0.0, 1.0, 2.0, 4.0]
    upload = parser().parse(upload_message(sent, SLOTS, [], []), newest_version=3)
    assert upload.episode_returns.tolist() == [7.0] and upload.episode_lengths.tolist() == [3]


def test_a_first_connections_envs_have_just_reset_so_their_first_episodes_count_whole() -> None:
    """An IMPALA actor's first unroll starts on the reset row, which is not done: the episode ending in it was seen
    from its start when the hello named no previous slots (fresh envs), and not when it did (envs that play on,
    met by a learner that restarted since)."""
    sent = unrolls()
    sent["reward"][0] = [0.0, 1.0, 2.0, 0.0]  # slot 7: an episode of 2 steps ends on the phantom at step 2
    returns = {}
    for reconnected in (False, True):
        history = UploadHistory(["core_h"])
        history.adopt(SLOTS.tolist(), [1, 2], reconnected)
        upload = queued(parser(history), upload_message(sent, SLOTS, [], []))
        returns[reconnected] = (upload.episode_returns.tolist(), upload.episode_lengths.tolist(), sum(t.partial for t in upload.taken))
        # A slot adopted already carries on its episode, whatever the next hello says.
        history.adopt(SLOTS.tolist(), [1, 2], reconnected=False)
        assert queued(parser(history), upload_message(following(sent, [1.0, 1.0, 1.0], phantom_at=3), SLOTS, [], [])).episode_returns.tolist() == [3.0]
    assert returns == {False: ([3.0], [2], 0), True: ([], [], 1)}


def test_what_an_env_left_on_a_slot_it_moved_from_is_not_met_again_when_it_gets_that_slot_back() -> None:
    """A first hello's slot 7 whose welcome was lost: the actor asks again, gets slot 9 and plays on there. When it
    is handed slot 7 back after a later reconnect, that slot's reset (or last step) is long stale."""
    history = UploadHistory(["core_h"])
    history.adopt([7], [1], reconnected=False)
    history.adopt([9], [1], reconnected=False)
    history.adopt([7], [1], reconnected=True)
    upload = queued(parser(history), upload_message(unrolls(1), SLOTS, [], []))  # slot 7's episode ends at step 2
    assert upload.episode_returns.tolist() == [] and upload.taken[0].partial == 1  # met mid-way: partial


def test_unrolls_that_do_not_follow_on_or_flags_that_disagree_are_refused() -> None:
    stream = parser()
    first = unrolls()
    queued(stream, upload_message(first, SLOTS, [], []))
    gap = following(first, [0.0, 0.0, 0.0])
    gap["observation"][1, 0] += 1.0
    with pytest.raises(ProtocolError, match=r"unroll 1 \(slot 9\): step 0 must repeat the previous unroll's last step; \['observation'\]"):
        stream.parse(upload_message(gap, SLOTS, [], []), newest_version=3)
    undone = unrolls()
    undone["done"][0, 3] = False
    with pytest.raises(ProtocolError, match="step 2 is final \\(phantom\\) but step 3 is not done"):
        parser().parse(upload_message(undone, SLOTS, [], []), newest_version=3)


def test_a_refused_or_unqueued_upload_leaves_no_trace_and_a_repeat_is_taken_in_once() -> None:
    """Issue 57: the learner counted 40 frames more than the steps it accepted and 8 episodes fewer. An unroll sent
    again after a reconnect (its Accepted answer lost with the stream) was queued twice, and a new stream did not
    count the episodes its envs were in the middle of."""
    history = UploadHistory(["core_h"])
    history.adopt(SLOTS.tolist(), [1, 2], reconnected=True)  # envs that play on: their first episodes are partial
    stream = parser(history)
    first = unrolls()
    queued(stream, upload_message(first, SLOTS, [], []))
    second = following(first, [1.0, 2.0, 0.5], phantom_at=3)
    broken = following(first, [1.0, 2.0, 0.5])
    broken["observation"][1, 1] = np.nan
    with pytest.raises(ProtocolError):
        stream.parse(upload_message(broken, SLOTS, [], []), newest_version=3)
    stream.parse(upload_message(second, SLOTS, [], []), newest_version=3)  # parsed, never queued (its stream was cut)
    # The actor reconnects and gets its slots back (same run ids): a new stream, the same history.
    history.adopt(SLOTS.tolist(), [1, 2], reconnected=True)
    again = parser(history)
    upload = queued(again, upload_message(second, SLOTS, [], []))
    assert (upload.repeated, upload.env_steps) == (0, 2 * T - 1)  # neither the refused nor the cut-off one left a trace
    assert upload.episode_returns.tolist() == [1.0 + 2.0 + 0.5]  # begun on the old stream: counted (it was not)
    # Its answer was lost with that stream too: the actor reconnects and sends it once more.
    resent = parser(history)
    repeat = queued(resent, upload_message(second, SLOTS, [], []))
    assert (repeat.repeated, repeat.env_steps, repeat.unrolls) == (2, 0, [])  # taken in once (it was twice)
    # Slot 9 handed to another env (another run id) starts afresh; slot 7's env carries on.
    history.adopt(SLOTS.tolist(), [1, 3], reconnected=True)
    third = following(second, [1.0, 1.0, 1.0], phantom_at=3)
    third["done"][0, 1] = True  # the row after second's final row
    third["observation"][1, 0] += 1.0  # the other env's own first step
    other = parser(history)
    assert queued(other, upload_message(third, SLOTS, [], [])).episode_returns.tolist() == [1.0 + 1.0]


def test_versions_past_the_learners_newest_count_as_its_newest() -> None:
    sent = unrolls()
    sent["version"][1, 2] = 40  # acted for a learner since restarted from an older checkpoint
    upload = parser().parse(upload_message(sent, SLOTS, [], []), newest_version=3)
    assert upload.unrolls[1]["version"].tolist() == [3, 3, 3, 3]


def corrupt(mutate: Callable[[dict[str, np.ndarray]], None]) -> pb.ActorMessage:
    sent = unrolls()
    mutate(sent)
    return upload_message(sent, SLOTS, [], [])


def column(name: str, data: bytes | None = None, dtype: str | None = None) -> Callable[[pb.ActorMessage], None]:
    def replace(message: pb.ActorMessage) -> None:
        found = next(c for c in message.unrolls.columns if c.name == name)
        if data is not None:
            found.data = data
        if dtype is not None:
            found.dtype = dtype

    return replace


CASES = {
    "NaN reward": (lambda u: u["reward"].__setitem__((0, 1), np.nan), None, "rewards must be finite"),
    "huge reward": (lambda u: u["reward"].__setitem__((1, 1), 1e3), None, "|r| <= 100"),
    "infinite observation": (lambda u: u["observation"].__setitem__((0, 0, 2), np.inf), None, "observations must be finite"),
    "NaN logit": (lambda u: u["logits"].__setitem__((1, 0, 1), np.nan), None, "logits must be finite"),
    "NaN state": (lambda u: u["core_h"].__setitem__((1, 0), np.nan), None, "core_h must be finite"),
    "huge state": (lambda u: u["core_h"].__setitem__((1, 0), 1e30), None, "core_h must be finite with |x| <= 1e+06"),
    "action out of range": (lambda u: u["action"].__setitem__((0, 0), 2), None, "actions must lie in [0, 2)"),
    "negative version": (lambda u: u["version"].__setitem__((0, 0), -1), None, "versions must be >= 0"),
    "huge logit": (lambda u: u["logits"].__setitem__((0, 0, 0), 1e30), None, "|x| <= 1e+06"),
    "short column": (lambda u: None, column("reward", b"\0" * 8), "column reward has 8 bytes, expected 32"),
    "bool byte 2": (lambda u: None, column("done", b"\2" * 8), "done must hold bytes 0 or 1"),
    # The same bytes as its int64 versions, but float64: the size alone would let them through.
    "float64 version": (lambda u: u.__setitem__("version", u["version"].astype(np.float64)), None, "version is '<f8', expected '<i8' (int64)"),
    "no dtype": (lambda u: None, column("reward", dtype=""), "reward is '', expected '<f4' (float32)"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_malformed_upload_is_refused_precisely(case: str) -> None:
    mutate, edit, expected = CASES[case]
    message = corrupt(mutate)
    if edit is not None:
        edit(message)
    with pytest.raises(ProtocolError, match=re.escape(expected)):
        parser().parse(message, newest_version=3)


def test_slots_columns_and_episodes_are_checked() -> None:
    good = upload_message(unrolls(), SLOTS, [], [])
    cases = []
    message = pb.ActorMessage()
    message.CopyFrom(good)
    message.unrolls.slots = np.array([7, 8], "<i4").tobytes()
    cases.append((message, "slots \\[8\\] are not owned"))
    message = pb.ActorMessage()
    message.CopyFrom(good)
    message.unrolls.slots = np.array([7, 7], "<i4").tobytes()
    cases.append((message, "distinct slots"))
    message = pb.ActorMessage()
    message.CopyFrom(good)
    del message.unrolls.columns[0]
    cases.append((message, "missing \\['observation'\\]"))
    message = pb.ActorMessage()
    message.CopyFrom(good)
    message.unrolls.columns.add(name="reward", data=b"")
    cases.append((message, "some twice"))
    message = pb.ActorMessage()
    message.CopyFrom(good)
    message.unrolls.episode_returns = np.zeros(1, "<f8").tobytes()
    cases.append((message, "one entry per episode"))
    cases.append((upload_message(unrolls(), SLOTS, [1.0], [0]), "lengths must be >= 1"))
    cases.append((upload_message(unrolls(), SLOTS, [1e9], [5]), "return\\| <= 100 x length"))
    cases.append((upload_message(unrolls(), SLOTS, [1.0] * 3, [5] * 3), "3 episodes reported, but the unrolls hold 2 "))
    cases.append((pb.ActorMessage(hello=pb.Hello()), "expected an unrolls message"))
    for message, expected in cases:
        with pytest.raises(ProtocolError, match=expected):
            parser().parse(message, newest_version=3)


class Variable:
    def __init__(self, name: str, value: np.ndarray) -> None:
        self.name, self.value = name, value

    def numpy(self) -> np.ndarray:
        return self.value


async def answer(chunks: list[pb.ParamsChunk]) -> AsyncIterator[pb.ParamsChunk]:
    for chunk in chunks:
        yield chunk


async def test_params_round_trip_and_a_mismatched_or_short_answer_is_refused() -> None:
    variables = [Variable("w", np.arange(12, dtype=np.float32).reshape(3, 4)), Variable("b", np.ones(5, np.float32))]
    publisher = ParamsPublisher(lambda: variables, chunk_bytes=7)
    with pytest.raises(LookupError):
        next(publisher.chunks(-1))
    publisher.publish(5)
    chunks = [chunk for chunk, _ in publisher.chunks(-1)]
    specs = [((3, 4), "float32"), ((5,), "float32")]
    params = await receive_params(answer(chunks), specs)
    assert params.version == 5
    for got, variable in zip(params.arrays, variables):
        np.testing.assert_array_equal(got, variable.value)
    assert (await receive_params(answer([chunk for chunk, _ in publisher.chunks(5)]), specs)).arrays is None
    with pytest.raises(ParamsError, match="differs from this actor's"):
        await receive_params(answer(chunks), [((4, 3), "float32"), ((5,), "float32")])
    with pytest.raises(ParamsError, match="sent 63 of 68"):
        await receive_params(answer(chunks[:-1]), specs)
    with pytest.raises(ParamsError, match="do not add up"):
        await receive_params(answer([*chunks, chunks[-1]]), specs)


class Watched(bytearray):
    """Bytes a weak reference can watch (gRPC hands over bytes, which cannot be watched)."""


class OneMessage:
    """A stream's requests: one message, then a wait (the actor is idle) until ``end`` is set."""

    def __init__(self, raw: bytes) -> None:
        self._raw, self.end = raw, asyncio.Event()

    def __aiter__(self) -> OneMessage:
        return self

    async def __anext__(self) -> bytes:
        if self._raw is None:
            await self.end.wait()
            raise StopAsyncIteration
        raw, self._raw = self._raw, None
        return raw


async def test_a_stream_waiting_for_its_next_message_keeps_no_earlier_one() -> None:
    """An idle IMPALA stream held its last upload's bytes until its next: thousands of idle streams, as many uploads."""
    raw = Watched(upload_message(unrolls(), SLOTS, [], []).SerializeToString())
    watch, requests = weakref.ref(raw), OneMessage(raw)
    del raw
    messages = checked(requests, 1 << 30, "an upload")
    message, size = await anext(messages)
    assert message.WhichOneof("payload") == "unrolls" and size == len(message.SerializeToString())
    del message
    waiting = asyncio.ensure_future(anext(messages))
    await asyncio.sleep(0)  # the generator now waits for the next message
    assert watch() is None
    requests.end.set()
    with pytest.raises(StopAsyncIteration):
        await waiting
