"""IMPALA mode over real gRPC on loopback: the versioned parameter pulls (authenticated, chunked,
bounded), unroll uploads and their checks, and each mode refusing the other's calls."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import tracemalloc

import grpc
import numpy as np
import pytest
from tests.conftest import small_config
from tests.server.transport.test_security import self_signed
from tests.waiting import until
from tests.wire import Stream, hello, refused

from aioseed.clients.actor import ActorConfig
from aioseed.impala_actor.actor import ImpalaActor, upload_message
from aioseed.proto import aioseed_pb2 as pb
from aioseed.proto import aioseed_pb2_grpc as pb_grpc
from aioseed.server.acting.step import unroll_columns

TOKEN = (("authorization", "Bearer s3cret"),)


def impala_config(tmp_path, server=None, **overrides):
    return small_config(
        tmp_path,
        architecture="impala",
        server={"token": "s3cret", **(server or {})},
        console={"enabled": False},
        **overrides,
    )


async def get_params(channel: grpc.aio.Channel, have_version: int, metadata: tuple = TOKEN) -> list[pb.ParamsChunk]:
    return [chunk async for chunk in pb_grpc.LearnerStub(channel).GetParams(pb.ParamsRequest(have_version=have_version), metadata=metadata)]


def weights_bytes(learner) -> bytes:
    return b"".join(np.asarray(v.numpy()).astype("<f4").tobytes() for v in learner.agent.policy_variables())


async def test_params_come_chunked_as_the_learners_weights_and_only_when_newer(running_learner, tmp_path) -> None:
    async with running_learner(impala_config(tmp_path, server={"params_chunk_bytes": 1000})) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            header, *data = await get_params(channel, -1)
            assert header.version == 0 and not header.data
            assert [(tuple(t.shape), t.dtype) for t in header.manifest] == learner.agent.variable_specs()
            assert len(data) == math.ceil(header.total_bytes / 1000) > 1
            assert all(len(chunk.data) <= 1000 and chunk.version == 0 for chunk in data)
            assert b"".join(chunk.data for chunk in data) == weights_bytes(learner)
            # The actor holds the newest version: the header alone, no tensors.
            (current,) = await get_params(channel, 0)
            assert (current.version, current.total_bytes, len(current.manifest), current.data) == (0, 0, 0, b"")
            error = await refused_params(channel, -2)
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT


async def refused_params(channel: grpc.aio.Channel, have_version: int, metadata: tuple = TOKEN) -> grpc.aio.AioRpcError:
    try:
        await get_params(channel, have_version, metadata)
    except grpc.aio.AioRpcError as error:
        return error
    raise AssertionError("the learner sent parameters")


async def test_an_impala_actor_over_tls_trains_pulls_new_versions_and_tokens_are_required(running_learner, tmp_path) -> None:
    cert, key = self_signed(tmp_path)
    config = impala_config(
        tmp_path, server={"tls_cert": cert, "tls_key": key}, training={"batch_size": 4, "unroll_length": 5}
    )
    async with running_learner(config) as learner:
        actor = ImpalaActor(
            ActorConfig(
                learner=f"127.0.0.1:{learner.port}", num_envs=4, envs_per_message=2, tls_ca=cert, token="s3cret",
                architecture="impala",
            )
        )
        task = asyncio.create_task(actor.run())
        try:
            # Every update is a new version, and the actor acts with the versions it pulls.
            await until(lambda: learner.train_steps >= 3 and actor.version >= 2, "training and new versions at the actor", 3000)
            assert learner.frames > 0 and actor.uploads >= 12
            assert learner.connected_envs == 4
            await until(lambda: learner.metrics().get("learner/policy_lag", math.nan) >= 0, "the policy lag metric")
            credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
            async with grpc.aio.secure_channel(f"127.0.0.1:{learner.port}", credentials) as channel:
                for metadata in ((), (("authorization", "Bearer wrong"),)):
                    assert (await refused_params(channel, -1, metadata)).code() == grpc.StatusCode.UNAUTHENTICATED
                    error = await refused(channel, hello(1), metadata, rpc="Learn")
                    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
            async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as plaintext:
                assert (await refused_params(plaintext, -1)).code() == grpc.StatusCode.UNAVAILABLE
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_parameter_downloads_past_the_limit_get_resource_exhausted(running_learner, tmp_path) -> None:
    # 16 MiB of weights in 64 KiB chunks: an unread download stays in flight, held by flow control.
    config = impala_config(
        tmp_path,
        server={"max_params_calls": 1, "params_chunk_bytes": 65536, "params_stall_s": 600.0},  # the held one never counts as stalled
        impala={"hidden_sizes": (2048, 2048)},
    )
    async with running_learner(config) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            stub = pb_grpc.LearnerStub(channel)
            holding = stub.GetParams(pb.ParamsRequest(have_version=-1), metadata=TOKEN)
            header = await holding.read()
            assert header.total_bytes > 16 * 2**20
            error = await refused_params(channel, -1)
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "maximum of 1 parameter downloads" in error.details()
            holding.cancel()
            await until(lambda: learner._stages.service.params_downloads == 0, "the cancelled download to end")
            (current,) = await get_params(channel, 0)  # served again once the first ended
            assert current.version == 0


async def test_each_architecture_refuses_the_others_calls(running_learner, tmp_path) -> None:
    async with running_learner(small_config(tmp_path / "seed", console={"enabled": False})) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            error = await refused_params(channel, -1, ())
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and "parameters never leave" in error.details()
            error = await refused(channel, hello(1), rpc="Learn")
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    async with running_learner(impala_config(tmp_path / "impala")) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            error = await refused(channel, hello(1), TOKEN)
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and "--architecture impala" in error.details()


def zero_unrolls(learner, count: int) -> dict[str, np.ndarray]:
    """``count`` valid unrolls of local envs 0..count-1: zeros of the learner's unroll columns."""
    steps = learner.config.training.unroll_length + 1
    per_unroll = learner.agent.state_columns()
    columns = {
        name: np.zeros((count, *shape) if name in per_unroll else (count, steps, *shape), dtype)
        for name, (shape, dtype) in unroll_columns(learner.agent, learner.spec).items()
    }
    return {**columns, "slot": np.arange(count, dtype=np.int32)}


async def test_a_malformed_upload_is_invalid_argument_and_other_streams_carry_on(running_learner, tmp_path) -> None:
    async with running_learner(impala_config(tmp_path)) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            good, bad = Stream(channel, TOKEN, "Learn"), Stream(channel, TOKEN, "Learn")
            slots = await good.handshake(hello(2))
            assert good.welcome.unroll_length == learner.config.training.unroll_length
            assert '"network"' in good.welcome.agent_config
            await bad.handshake(hello(2, run_id_base=2000))
            unrolls = zero_unrolls(learner, 2)
            unrolls["phantom"][0, 0] = unrolls["done"][0, 1] = True  # an episode starts at step 1 of env 0 ...
            unrolls["done"][0, 5] = True  # ... and ends at step 5 (SEED's convention: no final row)
            reply = await good.send(upload_message(unrolls, slots, [9.0], [9]))
            unrolls["phantom"][0, 0] = unrolls["done"][0, 1] = unrolls["done"][0, 5] = False  # the next ones follow on
            assert reply.accepted.params_version == 0
            unrolls["logits"][1, 3, 0] = np.nan
            try:
                await bad.send(upload_message(unrolls, bad.slots, [], []))
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "logits must be finite" in error.details()
            else:
                raise AssertionError("a NaN logit was accepted")
            unrolls["logits"][1, 3, 0] = 0.0
            reply = await good.send(upload_message(unrolls, slots, [], []))
            assert reply.accepted.params_version == 0
            assert learner.frames == 2 * 2 * learner.config.training.unroll_length  # two uploads of two unrolls
            await until(lambda: learner.metrics().get("charts/episodes") == 1.0, "the uploaded episode to count")
            assert learner.metrics()["charts/return"] == 0.0  # its steps' rewards, not the 9.0 reported


async def test_a_forged_episode_return_reaches_neither_the_charts_nor_the_stop_condition(running_learner, tmp_path) -> None:
    config = impala_config(tmp_path, return_window=2, stop={"at_return": 50.0})
    async with running_learner(config) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        forger = Stream(channel, TOKEN, "Learn")
        slots = await forger.handshake(hello(1))
        steps = learner.config.training.unroll_length
        unrolls = zero_unrolls(learner, 1)
        unrolls["reward"][:] = 1.0
        unrolls["phantom"][0, 0] = unrolls["done"][0, 1] = True  # an episode starts at step 1 (its reward not counted)
        unrolls["done"][0, 5] = True  # and ends at step 5: return 4 over steps 2..5
        await forger.send(upload_message(unrolls, slots, [1e4], [4]))  # within the format's bound, 1e6 x 4
        unrolls["phantom"][0, 0] = unrolls["done"][0, 1] = False
        await forger.send(upload_message(unrolls, slots, [1e4], [4]))  # the next ends at step 5 again: return T
        await until(lambda: learner.metrics().get("charts/episodes") == 2.0, "both episodes to count")
        assert learner.metrics()["charts/return"] == (4.0 + steps) / 2 < 50.0
        assert learner.stopping.reason is None


async def test_stalled_downloads_hold_at_most_their_connections_share_and_never_keep_a_healthy_pull_out(running_learner, tmp_path) -> None:
    """The issue's attack: 64 downloads that are never read, from 16 connections of 4 (or 4 connections
    of 16, of which each gets its share of 4). Once stalled they no longer count against the 64 moving
    downloads, so a healthy client's pulls all succeed; the send timeout ends them."""
    config = impala_config(tmp_path, server={"params_send_timeout_s": 4.0, "params_stall_s": 0.5})
    config = dataclasses.replace(config, impala=dataclasses.replace(config.impala, hidden_sizes=(1024, 1024)))  # ~4 MiB
    async with running_learner(config) as learner, contextlib.AsyncExitStack() as stack:
        service = learner._stages.service
        stalled = []
        for connections, calls in ((4, 16), (12, 4)):
            for _ in range(connections):
                # Its own connection each (channels to one address share one by default), with the initial
                # 64 KiB flow-control window (no BDP probing to widen it): the client stops taking data in.
                options = [("grpc.use_local_subchannel_pool", 1), ("grpc.http2.bdp_probe", 0)]
                channel = grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}", options=options)
                stub = pb_grpc.LearnerStub(await stack.enter_async_context(channel))
                stalled += [stub.GetParams(pb.ParamsRequest(have_version=-1), metadata=TOKEN) for _ in range(calls)]
        # (The refusals' statuses are not read here: a connection whose reader stalled may not deliver them.)
        await until(lambda: sorted(service.params_gate._by_peer.values()) == [4] * 16, "each connection holding its share", 3000)
        await until(lambda: service.params_gate.stalled == 64, "the 64 unread downloads to count as stalled", 3000)
        assert service.params_gate.active == 0 and service.params_downloads == 64
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as healthy:
            for _ in range(5):
                header, *data = await get_params(healthy, -1)
                assert b"".join(chunk.data for chunk in data) == weights_bytes(learner)
        await until(lambda: service.params_downloads == 0, "the send timeout ending the stalled downloads", 8000)
        assert not service.params_gate._by_peer
        assert service.refusals.counts["DEADLINE_EXCEEDED"] == 64 and service.refusals.counts["RESOURCE_EXHAUSTED"] == 48
        for call in stalled:
            call.cancel()


async def test_uploads_past_the_byte_budget_get_resource_exhausted_and_the_held_one_goes_on(running_learner, tmp_path) -> None:
    config = impala_config(tmp_path, training={"batch_size": 2, "queue_capacity": 2})
    async with running_learner(config) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        service = learner._stages.service
        first, second = Stream(channel, TOKEN, "Learn"), Stream(channel, TOKEN, "Learn")
        slots = await first.handshake(hello(2))
        await second.handshake(hello(2, run_id_base=2000))
        message = upload_message(zero_unrolls(learner, 2), slots, [], [])
        service._limits = dataclasses.replace(service._limits, upload_bytes=message.ByteSize() + 100)  # room for one
        learner.pause()  # the unroll queue fills; then an upload waits for room, held by the learner
        held = asyncio.ensure_future(first.send(message))
        while (await asyncio.wait([held], timeout=1.0))[0]:
            held.result()
            held = asyncio.ensure_future(first.send(message))
        assert service.metrics()["actors/upload_bytes_held"] == message.ByteSize()
        error = None
        try:
            await second.send(upload_message(zero_unrolls(learner, 2), second.slots, [], []))
        except grpc.aio.AioRpcError as exc:
            error = exc
        assert error is not None and error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "bytes of uploads; the limit is" in error.details()
        learner.resume()
        assert (await held).accepted.params_version >= 0  # the held upload is queued once training goes on
        assert service.metrics()["actors/upload_bytes_held"] == 0.0


async def test_an_undecodable_params_request_is_invalid_argument(running_learner, tmp_path) -> None:
    async with running_learner(impala_config(tmp_path)) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        raw = channel.unary_stream("/aioseed.v1.Learner/GetParams", request_serializer=None, response_deserializer=None)
        call = raw(b"\xff\xff\xff", metadata=TOKEN)  # a field key with no end: no ParamsRequest
        assert await call.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a valid aioseed.v1.ParamsRequest" in await call.details()
        call = raw(pb.ParamsRequest(have_version=0).SerializeToString() + UNKNOWN_FIELD, metadata=TOKEN)
        assert await call.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert await call.details() == "ParamsRequest carries fields that aioseed.v1.ParamsRequest's schema does not define"
        (current,) = await get_params(channel, 0)  # the learner serves on
        assert current.version == 0


UNKNOWN_FIELD = b"\xa2\x06" + b"\x80\x80\x40" + bytes(2**20)  # field 100, 1 MiB long: no message defines it


async def test_an_upload_padded_with_fields_outside_the_schema_is_invalid_argument(running_learner, tmp_path) -> None:
    """A small unknown field is found in the parsed message; 1 MiB of padding is refused before it is parsed,
    as longer than any upload of the stream's envs can be."""
    async with running_learner(impala_config(tmp_path)) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        good = Stream(channel, TOKEN, "Learn")
        await good.handshake(hello(1, run_id_base=2000))
        small = b"\xa2\x06\x04" + b"junk"  # field 100, 4 bytes
        for padding, expected in (
            (small, "ActorMessage.unrolls.columns[0] carries fields that aioseed.v1.ActorMessage's schema does not define"),
            (UNKNOWN_FIELD, "is longer than an upload of 1 unrolls can be"),
        ):
            padded = Stream(channel, TOKEN, "Learn")
            slots = await padded.handshake(hello(1))
            message = upload_message(zero_unrolls(learner, 1), slots, [], [])
            message.unrolls.columns[0].MergeFromString(padding)  # protobuf keeps it as an unknown field
            try:
                await padded.send(message)
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert expected in error.details(), error.details()
            else:
                raise AssertionError("the padded upload was accepted")
        assert learner.frames == 0
        reply = await good.send(upload_message(zero_unrolls(learner, 1), good.slots, [], []))
        assert reply.accepted.params_version == 0


async def test_refused_uploads_do_not_pile_up_in_memory(running_learner, tmp_path) -> None:
    """A refused call leaves a reference cycle in grpc.aio that holds part of what it received; the learner
    collects them while refusals come in (``Refusals.collect_cycles``), so a flood of refused uploads does
    not outpace Python's collector. Measured with tracemalloc: the bytes gRPC hands the handler are
    Python objects."""
    refused, size = 24, 4 * 2**20
    async with running_learner(impala_config(tmp_path)) as learner, grpc.aio.insecure_channel(
        f"127.0.0.1:{learner.port}", options=[("grpc.max_send_message_length", 2 * size)]
    ) as channel:
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(refused):
                flood = Stream(channel, TOKEN, "Learn")
                slots = await flood.handshake(hello(1, run_id_base=5000 + i))
                message = upload_message(zero_unrolls(learner, 1), slots, [], [])
                message.unrolls.columns[0].data = bytes(size)
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await flood.send(message)
                del message, flood
            refusals = learner._service.refusals
            # The transport's housekeeping ticks once a second; the trailing collection follows the last refusal.
            await until(lambda: refusals.collected, "the collections owed to the refusals", attempts=500)
            grown = tracemalloc.get_traced_memory()[0] - before
            held = tracemalloc.take_snapshot().statistics("lineno")[:3] if grown >= 3 * size else []  # for the failure message
        finally:
            tracemalloc.stop()
        assert refusals.counts["INVALID_ARGUMENT"] == refused
        assert grown < 3 * size, f"{grown / 2**20:.0f} MiB still held after {refused} refused uploads of {size / 2**20:.0f} MiB: {held}"


async def test_an_upload_is_parsed_and_checked_off_the_event_loop(running_learner, tmp_path, monkeypatch) -> None:
    """A 59 MB Atari upload takes ~50 ms to check: on the event loop, every other stream waited that long."""
    import threading

    from aioseed.server.transport.uploads import UnrollParser

    threads: list[threading.Thread] = []
    parse = UnrollParser.parse

    def recording(self, *args, **kwargs):
        threads.append(threading.current_thread())
        return parse(self, *args, **kwargs)

    monkeypatch.setattr(UnrollParser, "parse", recording)
    async with running_learner(impala_config(tmp_path)) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            stream = Stream(channel, TOKEN, "Learn")
            slots = await stream.handshake(hello(2))
            reply = await stream.send(upload_message(zero_unrolls(learner, 2), slots, [], []))
            assert reply.accepted.params_version == 0
    assert threads and threading.main_thread() not in threads


async def test_each_unroll_counts_once_through_refused_cut_off_and_resent_uploads(running_learner, tmp_path) -> None:
    """Issue 57: after a probe's refused and cut-off uploads, a learner counted 40 frames (one upload) more than the
    steps it had accepted and 8 episodes (one per env) fewer. An actor sends again the upload whose Accepted answer it
    lost with a stream; the learner had queued it already, and the new stream did not count the episodes in progress."""
    config = impala_config(tmp_path, return_window=1, training={"batch_size": 2, "queue_capacity": 1})
    async with running_learner(config) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        steps = learner.config.training.unroll_length
        actor = Stream(channel, TOKEN, "Learn")
        slots = await actor.handshake(hello(2, run_id_base=500))
        sent: list[pb.ActorMessage] = []

        def upload(index: int) -> pb.ActorMessage:
            unrolls = zero_unrolls(learner, 2)
            unrolls["observation"][:, 0], unrolls["observation"][:, 1:] = index - 1, index  # step 0 repeats the last
            unrolls["reward"][:] = 1.0
            if index == 0:
                unrolls["done"][0, 0] = True  # env 0's episode starts here (seen whole) ...
            sent.append(upload_message(unrolls, slots, [], []))
            return sent[-1]

        learner.pause()  # the unroll queue fills: an upload then waits for room, its stream held back
        held = asyncio.ensure_future(actor.send(upload(0)))
        while (await asyncio.wait([held], timeout=1.0))[0]:
            held.result()
            held = asyncio.ensure_future(actor.send(upload(len(sent))))
        held.cancel()
        actor.call.cancel()  # cut off while the learner queues its upload
        hostile = Stream(channel, TOKEN, "Learn")  # a stream whose upload is refused
        await hostile.handshake(hello(2, run_id_base=900))
        bad = zero_unrolls(learner, 2)
        bad["reward"][:] = np.nan
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await hostile.send(upload_message(bad, hostile.slots, [], []))
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        learner.resume()

        # The actor reconnects for the same envs and sends the upload it has no answer for again, then one more
        # that ends env 0's episode.
        again = Stream(channel, TOKEN, "Learn")
        assert (await again.handshake(hello(2, run_id_base=500, previous=slots.tolist()))).tolist() == slots.tolist()
        assert (await again.send(sent[-1])).accepted.params_version >= 0
        last = zero_unrolls(learner, 2)
        last["observation"][:, 0], last["observation"][:, 1:], last["reward"][:] = len(sent) - 1, len(sent), 1.0
        last["phantom"][0, -1] = last["done"][0, -1] = True  # ... and ends here
        await again.send(upload_message(last, slots, [], []))
        uploads = len(sent) + 1
        await until(lambda: learner.metrics().get("charts/episodes") == 1.0, "env 0's episode counted")
        assert learner.frames == uploads * 2 * steps - 1  # every unroll once; the final row of the last is no step
        assert learner.metrics()["charts/return"] == uploads * steps  # begun on the first stream, counted on the second
