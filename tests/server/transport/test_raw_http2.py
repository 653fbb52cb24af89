"""What no gRPC client library will send, written frame by frame with h2 against a live learner: an
IMPALA upload whose gRPC length prefix promises more bytes than arrive before END_STREAM, and a connection whose
streams never take an answer in (a flow-control window of 0).

gRPC's C core discards such a partial message and hands the handler a clean half-close, so the learner
cannot answer INVALID_ARGUMENT (docs/operations.md, "IMPALA mode's limits"). What must hold is that
nothing of the cut upload is accepted, the stream's envs are released, and other streams carry on."""

from __future__ import annotations

import asyncio
import struct

import grpc
import h2.config
import h2.connection
import h2.events
import h2.settings
import numpy as np
from tests.conftest import small_config
from tests.server.transport.test_impala_mode import TOKEN, impala_config, zero_unrolls
from tests.waiting import until
from tests.wire import Stream, hello

from aioseed.impala_actor.actor import upload_message
from aioseed.proto import aioseed_pb2 as pb


class RawStream:
    """One HTTP/2 connection with one gRPC call on it, driven by hand."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, metadata: tuple) -> None:
        self.reader, self.writer = reader, writer
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.h2.initiate_connection()
        self.id = self.h2.get_next_available_stream_id()
        headers = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "learner")]
        self.h2.send_headers(self.id, [*headers, ("content-type", "application/grpc"), ("te", "trailers"), *metadata])
        self.messages: list[bytes] = []
        self.trailers: dict[bytes, bytes] | None = None

    async def send(self, payload: bytes, declared: int | None = None, end_stream: bool = False) -> None:
        """One gRPC frame: the 5-byte prefix says ``declared`` bytes (default: as many as sent)."""
        prefix = b"\0" + struct.pack(">I", len(payload) if declared is None else declared)
        self.h2.send_data(self.id, prefix + payload, end_stream=end_stream)
        await self._flush()

    async def receive(self, done) -> None:
        """Reads frames until ``done()``; each gRPC message and the trailers are kept."""
        while not done():
            data = await asyncio.wait_for(self.reader.read(1 << 16), 10)
            assert data, "the learner closed the connection"
            for event in self.h2.receive_data(data):
                if isinstance(event, h2.events.DataReceived):
                    self.messages.append(event.data[5:])  # one small message per frame here
                    self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.TrailersReceived):
                    self.trailers = dict(event.headers)
            await self._flush()

    async def _flush(self) -> None:
        self.writer.write(self.h2.data_to_send())
        await self.writer.drain()


async def test_an_upload_cut_short_by_end_of_stream_is_never_accepted(running_learner, tmp_path) -> None:
    async with running_learner(impala_config(tmp_path)) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        reader, writer = await asyncio.open_connection("127.0.0.1", learner.port)
        raw = RawStream(reader, writer, "/aioseed.v1.Learner/Learn", (("authorization", "Bearer s3cret"),))
        await raw.send(hello(1).SerializeToString())
        await raw.receive(lambda: raw.messages)
        slots = np.array(pb.LearnerMessage.FromString(raw.messages[0]).welcome.slots, np.int32)
        assert learner.connected_envs == 1
        upload = upload_message(zero_unrolls(learner, 1), slots, [], []).SerializeToString()
        await raw.send(upload[: len(upload) // 2], declared=len(upload), end_stream=True)
        await raw.receive(lambda: raw.trailers is not None)
        writer.close()
        assert len(raw.messages) == 1  # the welcome, and no Accepted
        assert learner.frames == 0
        await until(lambda: learner.connected_envs == 0, "the cut stream's env to be released")
        good = Stream(channel, TOKEN, "Learn")
        await good.handshake(hello(1, run_id_base=2000))
        assert (await good.send(upload_message(zero_unrolls(learner, 1), good.slots, [], []))).accepted.params_version == 0
        assert learner.frames == learner.config.training.unroll_length


async def test_streams_that_never_take_an_answer_in_stay_counted_until_their_connection_closes(running_learner, tmp_path) -> None:
    """Issue 57: streams whose answer flow control held back were dropped from the books at the message timeout,
    but stayed open on the wire (no RST_STREAM or trailers: grpc.aio cannot reset a stream, and a status queues
    behind the held answer), so one connection opened 120 against --server.max-streams 64."""
    config = small_config(tmp_path, server={"message_timeout_s": 1.0, "max_streams": 64})
    async with running_learner(config) as learner:
        service = learner._stages.service
        reader, writer = await asyncio.open_connection("127.0.0.1", learner.port)
        connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        connection.initiate_connection()
        connection.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})  # no answer can be taken in
        statuses: dict[int, str] = {}

        def open_streams(count: int, base: int) -> None:
            for i in range(count):
                stream = connection.get_next_available_stream_id()
                connection.send_headers(stream, [(":method", "POST"), (":scheme", "http"), (":path", "/aioseed.v1.Learner/Act"),
                                                 (":authority", "learner"), ("content-type", "application/grpc"), ("te", "trailers")])
                payload = hello(1, run_id_base=base + i).SerializeToString()
                connection.send_data(stream, b"\0" + struct.pack(">I", len(payload)) + payload)

        async def exchange(done) -> None:
            """Writes what is due and reads frames (acknowledging pings) until ``done()``."""
            for _ in range(500):
                writer.write(connection.data_to_send())
                await writer.drain()
                if done():
                    return
                try:
                    data = await asyncio.wait_for(reader.read(1 << 16), 0.05)
                except TimeoutError:
                    continue
                assert data, "the learner closed the connection"
                for event in connection.receive_data(data):
                    if isinstance(event, h2.events.TrailersReceived | h2.events.ResponseReceived):
                        status = dict(event.headers).get(b"grpc-status")
                        if status is not None:
                            statuses[event.stream_id] = status.decode()
                    elif isinstance(event, h2.events.StreamReset):  # after a status: NO_ERROR, ending the request side
                        statuses.setdefault(event.stream_id, f"reset {event.error_code!r}")
            raise AssertionError(f"timed out: {len(statuses)} statuses, {len(service.streams)} streams")

        open_streams(100, 1000)
        await exchange(lambda: len(statuses) == 36 and len(service.streams) == 64)
        assert set(statuses.values()) == {str(grpc.StatusCode.RESOURCE_EXHAUSTED.value[0])}  # past max-streams
        # The message timeout passes: each is counted as DEADLINE_EXCEEDED, and still holds its place.
        await exchange(lambda: service.refusals.counts["DEADLINE_EXCEEDED"] == 64)
        assert service.metrics()["actors/streams_unread"] == 64.0 and learner.connected_envs == 64
        open_streams(20, 5000)  # before: welcomed, 120 streams on the connection
        await exchange(lambda: len(statuses) == 56)
        assert len(service.streams) == 64 and set(statuses.values()) == {str(grpc.StatusCode.RESOURCE_EXHAUSTED.value[0])}
        writer.close()  # the connection closes: gRPC ends its calls, and each gives its place and slots back
        # The slots follow once the inference loop has let go of the streams' rows (``_detach``).
        await until(lambda: not service.streams and learner.connected_envs == 0, "the held streams and their envs to end")
