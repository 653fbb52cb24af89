"""TLS on the actor port, stream limits and the standard health service around shutdown."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import pathlib

import grpc
import numpy as np
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tests.conftest import small_config
from tests.waiting import until
from tests.wire import Stream, hello, refused, steps

from aioseed.clients.actor import Actor, ActorConfig
from aioseed.proto import SERVICE_NAME


def self_signed(directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """A throwaway certificate for localhost / 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "learner.crt", directory / "learner.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


async def test_tls_actor_trains_and_a_plaintext_client_is_refused(running_learner, tmp_path) -> None:
    cert, key = self_signed(tmp_path)
    async with running_learner(small_config(tmp_path, server={"tls_cert": cert, "tls_key": key})) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=4, envs_per_message=4, tls_ca=cert))
        task = asyncio.create_task(actor.run())
        try:
            await until(lambda: actor.steps >= 200, "the TLS actor to step")
            async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
                error = await refused(channel, hello(1))
                assert error.code() == grpc.StatusCode.UNAVAILABLE
            assert learner.connected_envs == 4  # only the TLS actor's envs
        finally:
            task.cancel()


async def test_past_max_streams_a_client_gets_resource_exhausted_and_others_carry_on(running_learner, tmp_path) -> None:
    async with running_learner(small_config(tmp_path, server={"max_streams": 2})) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            first, second = Stream(channel), Stream(channel)
            await first.handshake(hello(2, run_id_base=100))
            await second.handshake(hello(2, run_id_base=200))
            error = await refused(channel, hello(2, run_id_base=300))
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "maximum of 2 streams" in error.details()
            for _ in range(3):
                assert len(await first.step(steps(first.slots, run_id_base=100))) == 2
                assert len(await second.step(steps(second.slots, run_id_base=200))) == 2
            assert len(learner.actors()) == 2 and learner.connected_envs == 4


async def test_past_max_envs_per_actor_a_stream_gets_resource_exhausted_and_other_actors_connect(
    running_learner, tmp_path
) -> None:
    async with running_learner(small_config(tmp_path, server={"max_envs_per_actor": 5})) as learner:
        address = f"127.0.0.1:{learner.port}"
        own_connection = [("grpc.use_local_subchannel_pool", 1)]  # channels to one target share a connection otherwise
        async with (
            grpc.aio.insecure_channel(address) as actor,
            grpc.aio.insecure_channel(address, options=own_connection) as other,
        ):
            first, second = Stream(actor), Stream(actor)
            await first.handshake(hello(2, run_id_base=100))
            await second.handshake(hello(2, run_id_base=200))
            error = await refused(actor, hello(2, run_id_base=300))
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "holds 4 envs and asks for 2 more; the maximum per actor is 5" in error.details()
            await Stream(actor).handshake(hello(1, run_id_base=400))  # still within the limit
            await Stream(other).handshake(hello(4, run_id_base=500))  # another connection has its own budget
            assert len(await first.step(steps(first.slots, run_id_base=100))) == 2
            await first.call.done_writing()
            await until(lambda: learner.connected_envs == 7, "the first stream's envs to be released")
            await Stream(actor).handshake(hello(2, run_id_base=600))  # its budget came back


async def test_thousands_of_streams_opened_at_once_are_all_welcomed(running_learner, tmp_path) -> None:
    # gRPC's default pending-call queue (1,000 soft, 3,000 hard) cancelled part of such a burst.
    n = 3000
    async with running_learner(small_config(tmp_path, server={"max_streams": n})) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            streams = [Stream(channel) for _ in range(n)]
            await asyncio.gather(*(s.handshake(hello(1, run_id_base=1 + i)) for i, s in enumerate(streams)))
            assert learner.connected_envs == n
            assert sorted(int(s.slots[0]) for s in streams) == list(range(n))
            for call in (s.call for s in streams):
                await call.done_writing()


async def test_health_is_serving_after_restore_and_not_serving_during_shutdown(running_learner, tmp_path) -> None:
    async with running_learner(small_config(tmp_path)) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            reply = await health.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
            watch = health.Watch(health_pb2.HealthCheckRequest(service=SERVICE_NAME))
            assert (await watch.read()).status == health_pb2.HealthCheckResponse.SERVING
            learner.request_stop()
            assert (await watch.read()).status == health_pb2.HealthCheckResponse.NOT_SERVING
            watch.cancel()


async def test_streams_without_a_hello_count_against_max_streams(running_learner, tmp_path) -> None:
    """The hello timeout is far beyond the test, so the silent streams are certainly still waiting."""
    async with running_learner(small_config(tmp_path, server={"max_streams": 3, "hello_timeout_s": 600.0})) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            silent = [Stream(channel) for _ in range(3)]
            for stream in silent:
                await stream.call.wait_for_connection()
            await until(lambda: learner.handshaking == 3, "three streams waiting for their hello")
            error = await refused(channel, hello(2))
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "maximum of 3 streams" in error.details()
            for stream in silent:
                stream.call.cancel()
            await until(lambda: learner.handshaking == 0, "the cancelled handshakes to be released")
            assert len(await Stream(channel).handshake(hello(2))) == 2


async def test_a_stream_without_a_hello_is_closed_after_the_timeout(running_learner, tmp_path) -> None:
    async with running_learner(small_config(tmp_path, server={"max_streams": 3, "hello_timeout_s": 1.0})) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            silent = [Stream(channel) for _ in range(3)]
            for stream in silent:  # closed by the learner after hello_timeout_s, not held open
                assert await stream.call.code() == grpc.StatusCode.DEADLINE_EXCEEDED
                assert "no hello within 1 s" in await stream.call.details()
            assert learner.handshaking == 0
            welcomed = Stream(channel)
            assert len(await welcomed.handshake(hello(2))) == 2


async def test_a_stream_that_goes_quiet_after_its_hello_is_closed_and_one_the_learner_holds_back_is_not(
    running_learner, tmp_path
) -> None:
    config = small_config(tmp_path, server={"message_timeout_s": 1.0}, training={"batch_size": 2, "unroll_length": 2, "queue_capacity": 2})
    async with running_learner(config) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            quiet, held = Stream(channel), Stream(channel)
            await quiet.handshake(hello(1, run_id_base=10))
            slots = await held.handshake(hello(2, run_id_base=20))
            learner.pause()  # the unroll queue fills, then inference waits: the learner holds `held`'s answer back
            answered = 0
            pending = asyncio.ensure_future(held.step(steps(slots, run_id_base=20)))
            while True:
                done, _ = await asyncio.wait([pending], timeout=2.5)  # past the timeout, waiting on the learner
                if not done:
                    break
                pending.result()
                answered += 1
                pending = asyncio.ensure_future(held.step(steps(slots, run_id_base=20)))
            assert answered >= 2
            assert await asyncio.wait_for(quiet.call.code(), 5) == grpc.StatusCode.DEADLINE_EXCEEDED
            assert "no message within 1 s of the learner's answer" in await quiet.call.details()
            learner.resume()
            await pending  # the held stream was not closed: its answer comes once training goes on
            assert len(learner.actors()) == 1


async def test_a_stream_that_stops_taking_its_answers_in_is_closed_and_the_others_carry_on(running_learner, tmp_path) -> None:
    """An actor that keeps sending steps but never reads its answers: once flow control holds the learner's
    answers back, the time they wait to be taken in counts as the actor's, so the message timeout closes
    the stream and frees its slots, while a healthy stream is answered throughout."""
    config = small_config(tmp_path, server={"message_timeout_s": 1.0, "max_envs": 1026})
    async with running_learner(config) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        service = learner._stages.service
        # Its own connection, with the initial 64 KiB flow-control window (no BDP probing to widen it).
        options = [("grpc.use_local_subchannel_pool", 1), ("grpc.http2.bdp_probe", 0)]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}", options=options) as stalled_channel:
            stalled, healthy = Stream(stalled_channel), Stream(channel)
            slots = await stalled.handshake(hello(1024, run_id_base=10_000))  # 4 KiB of actions per answer
            healthy_slots = await healthy.handshake(hello(2, run_id_base=20))

            async def never_read() -> None:
                for _ in range(64):  # 256 KiB of answers: far past the window
                    await stalled.call.write(steps(slots, run_id_base=10_000, observations=np.zeros((1024, 4), np.float32)))

            writer = asyncio.ensure_future(never_read())
            for _ in range(300):  # the healthy stream steps on while the stalled one waits out its timeout
                assert len(await healthy.step(steps(healthy_slots, run_id_base=20))) == 2
                if service.refusals.counts["DEADLINE_EXCEEDED"]:
                    break
                await asyncio.sleep(0.05)
            # Counted as DEADLINE_EXCEEDED, but held and counted (slots included) until its client ends it: no status
            # can follow the held answer, and grpc.aio cannot reset the stream (test_raw_http2.py has the wire's view).
            assert service.refusals.counts["DEADLINE_EXCEEDED"] == 1 and len(learner.actors()) == 2
            assert service.metrics()["actors/streams_unread"] == 1.0
            writer.cancel()
            stalled.call.cancel()
            await until(lambda: len(learner.actors()) == 1, "the stalled stream to end with its call")
            assert len(await Stream(channel).handshake(hello(1024, run_id_base=30_000))) == 1024  # its slots are free again
