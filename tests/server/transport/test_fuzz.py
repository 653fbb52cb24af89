"""Hypothesis-generated hostile input against a live learner: each bad message gets its precise status,
a healthy stream on the same server keeps getting actions, and nothing unhandled reaches the logs.

The learner serves from its own thread and event loop, so that hypothesis can drive it through
plain synchronous gRPC calls, one fresh stream per example.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Iterator

import grpc
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import serve, small_config
from tests.wire import hello, steps

from aioseed.proto import aioseed_pb2 as pb
from aioseed.proto import aioseed_pb2_grpc as pb_grpc
from aioseed.server.transport.protocol import MAX_DETAIL_CHARS
from aioseed.spec import EnvSpec
from aioseed.types import VALID_FLAG_BYTES

K = 2
MAX_MESSAGE_BYTES = 256 * 1024
INVALID = grpc.StatusCode.INVALID_ARGUMENT


class LearnerThread:
    """A real learner (no TensorFlow work is faked) serving on loopback from a thread of its own."""

    def __init__(self, tmp_path) -> None:
        self.config = small_config(tmp_path, server={"max_message_bytes": MAX_MESSAGE_BYTES}, console={"enabled": False})
        self.loop_errors: list[dict] = []
        self._ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), name="learner")

    async def _serve(self) -> None:
        """As the other tests' ``running_learner``, until ``__exit__`` sets ``_stop``."""
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: self.loop_errors.append(context))
        self.loop = loop
        self._stop = asyncio.Event()
        async with serve(self.config) as learner:
            self.learner, self.port = learner, learner.port
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> LearnerThread:
        self._thread.start()
        assert self._ready.wait(120), "the learner did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)


class HealthyStream(threading.Thread):
    """Steps K CartPole rows round after round for as long as the test runs."""

    def __init__(self, channel: grpc.Channel) -> None:
        super().__init__(name="healthy", daemon=True)
        self.stub = pb_grpc.LearnerStub(channel)
        self.answers = 0
        self.error: BaseException | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        requests: queue.Queue = queue.Queue()
        call = self.stub.Act(iter(requests.get, None))
        try:
            requests.put(hello(K, run_id_base=5000))
            slots = np.array(next(call).welcome.slots, np.int32)
            while not self.stop.is_set():
                requests.put(steps(slots, run_id_base=5000))
                reply = next(call)
                assert len(np.frombuffer(reply.actions.actions, "<i4")) == K
                self.answers += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            requests.put(None)
            call.cancel()


class ErrorRecords(logging.Handler):
    """Error-level stdlib log records: where grpc and asyncio report exceptions nobody handled."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[LearnerThread, grpc.Channel, HealthyStream]]:
    errors = ErrorRecords()
    logging.getLogger().addHandler(errors)
    with LearnerThread(tmp_path_factory.mktemp("fuzz")) as server:
        channel = grpc.insecure_channel(
            f"127.0.0.1:{server.port}", options=[("grpc.max_send_message_length", 4 * MAX_MESSAGE_BYTES)]
        )
        healthy = HealthyStream(channel)
        healthy.start()
        yield server, channel, healthy
        healthy.stop.set()
        healthy.join(10)
        channel.close()
    assert healthy.error is None, repr(healthy.error)
    assert healthy.answers > 100
    logging.getLogger().removeHandler(errors)
    assert server.loop_errors == [], server.loop_errors
    assert errors.records == [], errors.records


def exchange(channel: grpc.Channel, first: pb.ActorMessage, then=None) -> grpc.StatusCode:
    """Sends ``first``; if the learner welcomes it, sends ``then(slots)``. Returns the stream's final status."""
    requests: queue.Queue = queue.Queue()
    call = pb_grpc.LearnerStub(channel).Act(iter(requests.get, None))
    requests.put(first)
    try:
        reply = next(call)
        if then is not None:
            requests.put(then(np.array(reply.welcome.slots, np.int32)))
        requests.put(None)
        for _ in call:
            pass
    except grpc.RpcError as error:
        assert len(error.details() or "") <= MAX_DETAIL_CHARS, error.details()  # fits any client's metadata limit
        return error.code()
    finally:
        requests.put(None)
    return grpc.StatusCode.OK


def valid_steps(slots: np.ndarray) -> pb.Steps:
    return steps(slots, run_id_base=9000).steps


COLUMNS = ("slots", "run_ids", "rewards", "flags", "observations")


@st.composite
def broken_steps(draw: st.DrawFn) -> tuple[str, object]:
    """A function of the welcomed slots that builds one malformed steps message."""
    kinds = ["resized", "foreign_slots", "non_finite", "huge", "bad_flags", "zero_run_id", "unknown_field", "second_hello"]
    kind = draw(st.sampled_from(kinds))
    if kind == "resized":
        column = draw(st.sampled_from(COLUMNS))
        delta = draw(st.integers(-40, 40).filter(lambda d: d != 0))
        junk = draw(st.binary(min_size=40, max_size=40))

        def build(slots: np.ndarray) -> pb.ActorMessage:
            message = valid_steps(slots)
            raw = getattr(message, column)
            setattr(message, column, raw[:delta] if delta < 0 else raw + junk[:delta])
            return pb.ActorMessage(steps=message)

    elif kind == "foreign_slots":
        others = draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=K, max_size=K))

        def build(slots: np.ndarray) -> pb.ActorMessage:
            chosen = np.array(others, np.int32)
            if sorted(chosen.tolist()) == sorted(slots.tolist()):
                chosen[0] = -1
            message = valid_steps(slots)
            message.slots = chosen.astype("<i4").tobytes()
            return pb.ActorMessage(steps=message)

    elif kind == "non_finite":
        column = draw(st.sampled_from(["rewards", "observations"]))
        value = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        index = draw(st.integers(0, 4 * K - 1))

        def build(slots: np.ndarray) -> pb.ActorMessage:
            message = valid_steps(slots)
            array = np.frombuffer(getattr(message, column), "<f4").copy()
            array[index % len(array)] = value
            setattr(message, column, array.tobytes())
            return pb.ActorMessage(steps=message)

    elif kind == "huge":  # finite, but past max_abs_reward / max_abs_observation (1e6): it would overflow the loss
        column = draw(st.sampled_from(["rewards", "observations"]))
        value = draw(st.floats(1.01e6, 3.4e38)) * draw(st.sampled_from([1, -1]))
        index = draw(st.integers(0, 4 * K - 1))

        def build(slots: np.ndarray) -> pb.ActorMessage:
            message = valid_steps(slots)
            array = np.frombuffer(getattr(message, column), "<f4").copy()
            array[index % len(array)] = value
            setattr(message, column, array.tobytes())
            return pb.ActorMessage(steps=message)

    elif kind == "bad_flags":
        flag = draw(st.integers(0, 255).filter(lambda f: f not in VALID_FLAG_BYTES))

        def build(slots: np.ndarray) -> pb.ActorMessage:
            message = valid_steps(slots)
            message.flags = bytes([0, flag])
            return pb.ActorMessage(steps=message)

    elif kind == "zero_run_id":

        def build(slots: np.ndarray) -> pb.ActorMessage:
            message = valid_steps(slots)
            message.run_ids = np.array([0, 1], "<u8").tobytes()
            return pb.ActorMessage(steps=message)

    elif kind == "unknown_field":  # padding the schema does not define, at the top or inside the steps
        padding = draw(unknown_fields())
        nested = draw(st.booleans())

        def build(slots: np.ndarray) -> pb.ActorMessage:
            message = pb.ActorMessage(steps=valid_steps(slots))
            (message.steps if nested else message).MergeFromString(padding)  # kept as unknown fields
            return message

    else:

        def build(slots: np.ndarray) -> pb.ActorMessage:
            return hello(K, run_id_base=9000)

    return kind, build


def varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out) + bytes([value])


FIRST_UNKNOWN_FIELD = 1 + max(f.number for m in (pb.ActorMessage, pb.Hello, pb.Steps, pb.EnvSpec) for f in m.DESCRIPTOR.fields)
"""The lowest field number none of the messages a hello or steps message nests defines."""


@st.composite
def unknown_fields(draw: st.DrawFn) -> bytes:
    """One field that neither ActorMessage, Hello, Steps nor EnvSpec defines, as encoded bytes."""
    number = draw(st.integers(FIRST_UNKNOWN_FIELD, 2**29 - 1))
    if draw(st.booleans()):
        return varint(number << 3) + varint(draw(st.integers(0, 2**63)))
    payload = draw(st.binary(max_size=64))
    return varint(number << 3 | 2) + varint(len(payload)) + payload


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=broken_steps())
def test_malformed_steps_get_invalid_argument(served, case) -> None:
    _, channel, _ = served
    kind, build = case
    assert exchange(channel, hello(K, run_id_base=9000), build) == INVALID, kind


@st.composite
def broken_hellos(draw: st.DrawFn) -> tuple[pb.ActorMessage, grpc.StatusCode]:
    kinds = ["steps_first", "num_envs", "run_ids", "previous_slots", "slot_range", "spec", "long_spec", "unknown_field", "garbage_spec"]
    kind = draw(st.sampled_from(kinds))
    message = hello(K, run_id_base=9000)
    if kind == "unknown_field":
        draw(st.sampled_from([message, message.hello, message.hello.spec])).MergeFromString(draw(unknown_fields()))
        return message, INVALID
    if kind == "steps_first":
        return steps(np.arange(K, dtype=np.int32)), INVALID
    if kind == "num_envs":
        message.hello.num_envs = draw(st.sampled_from([0, 10**6]))
        del message.hello.run_ids[:]
        message.hello.run_ids.extend(range(1, message.hello.num_envs + 1) if message.hello.num_envs < 5 else [1])
        return message, INVALID
    if kind == "run_ids":
        del message.hello.run_ids[:]
        message.hello.run_ids.extend(draw(st.lists(st.integers(0, 2**64 - 1), max_size=5).filter(lambda r: len(r) != K or 0 in r)))
        return message, INVALID
    if kind == "previous_slots":
        message.hello.previous_slots.extend(draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=5).filter(lambda p: len(p) != K)))
        return message, INVALID
    if kind == "slot_range":  # per-slot state is sized by the highest slot: only [0, max_envs) may be asked for
        wrong = draw(st.one_of(st.integers(-(2**31), -1), st.integers(65536, 2**31 - 1)))
        message.hello.previous_slots.extend([0, wrong][:: draw(st.sampled_from([1, -1]))])
        return message, INVALID
    if kind == "long_spec":  # a 64 KiB dtype name or a 50,000-dim shape: the status detail stays short
        if draw(st.booleans()):
            message.hello.spec.observation_dtype = "f" * 65536
            return message, INVALID
        del message.hello.spec.observation_shape[:]
        message.hello.spec.observation_shape.extend([1] * 50_000)
        return message, grpc.StatusCode.FAILED_PRECONDITION
    if kind == "spec":
        shape = draw(st.lists(st.integers(1, 9), min_size=1, max_size=3).filter(lambda s: s != [4]))
        wrong = EnvSpec(observation_shape=tuple(shape), observation_dtype=draw(st.sampled_from(["float32", "uint8"])), action_space=2)
        message.hello.spec.CopyFrom(wrong.to_proto())
        return message, grpc.StatusCode.FAILED_PRECONDITION
    # NumPy parses some of these into structured, object or sub-array dtypes, and raises SyntaxError on ",".
    odd = st.sampled_from([",", "(2)i", "O", "V0", "U", "3i", "a,b", "i,", "M8[x]", "float64", "<f4", "uint8"])
    name = draw(st.one_of(odd, st.text(max_size=8)).filter(lambda t: t != "float32"))
    message.hello.spec.observation_dtype = name
    try:
        EnvSpec(observation_shape=(4,), observation_dtype=name, action_space=2)
    except ValueError:
        return message, INVALID
    return message, grpc.StatusCode.FAILED_PRECONDITION  # a real dtype, just not the one served


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=broken_hellos())
def test_malformed_handshakes_get_their_status(served, case) -> None:
    _, channel, _ = served
    message, expected = case
    assert exchange(channel, message) == expected, message


def test_an_oversized_message_gets_resource_exhausted(served) -> None:
    server, channel, _ = served
    assert server.config.server.max_message_bytes == MAX_MESSAGE_BYTES

    def huge(slots: np.ndarray) -> pb.ActorMessage:
        message = valid_steps(slots)
        message.observations = bytes(2 * MAX_MESSAGE_BYTES)
        return pb.ActorMessage(steps=message)

    assert exchange(channel, hello(K, run_id_base=9000), huge) == grpc.StatusCode.RESOURCE_EXHAUSTED


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=st.binary(max_size=64), after_hello=st.booleans())
def test_undecodable_bytes_get_invalid_argument(served, junk, after_hello) -> None:
    """Bytes that are no ActorMessage (tag 0x0f: field 1 with the invalid wire type 7), first or after the hello."""
    _, channel, _ = served
    call = channel.stream_stream("/aioseed.v1.Learner/Act")  # no serializers: raw bytes both ways
    messages = [hello(K, run_id_base=9000).SerializeToString()] if after_hello else []
    with pytest.raises(grpc.RpcError) as refused:
        for _ in call(iter([*messages, b"\x0f" + junk])):
            pass
    assert refused.value.code() == INVALID, refused.value.details()
    assert "not a valid aioseed.v1.ActorMessage" in refused.value.details()
