"""``aioseed bench impala-hostile``: IMPALA mode under hostile and failing peers (issue 31's targets),
through real processes on loopback.

A learner (``aioseed learner --architecture impala``, CartPole with a ~4 MiB MLP, its policy frozen by
a learning rate of 0 while it trains, so the work per step is stationary) and one healthy
``aioseed actor --architecture impala`` run as child processes; the bench process plays the other
clients. The actor's env steps/s are read from the learner's own count of uploaded frames
(``/api/metrics``), sampled every 0.25 s. Four tests, each beside a baseline taken just before it:

- **stalled pulls**: a healthy client pulls the full parameters in a loop; then a client opens
  ``stalled_connections`` connections that each hold ``calls_per_connection`` downloads and never read
  them (re-issuing those the learner ends). Pulls/s before, during and after.
- **upload flood**: ``flood_streams`` streams upload ``flood_message_bytes`` messages as fast as the
  learner takes them in (each is refused: its column has the wrong size). The learner's RSS before
  and at its peak, and the healthy actor's steps/s during the flood against before it.
- **stall**: the learner process is stopped (SIGSTOP) for ``stall_s``, then continued.
- **restart**: the learner is stopped (SIGTERM) and started again on the same port and logdir.
  For these two: seconds from the learner serving again until the actor's rate over the last 2 s is
  at least 0.9 of its rate before, and the most streams the learner held afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import pathlib
import signal
import socket
import sys
import tempfile
import time

import aiohttp
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from aioseed.bench.config import ImpalaHostileBench
from aioseed.proto import SERVICE_NAME
from aioseed.proto import aioseed_pb2 as pb
from aioseed.proto import aioseed_pb2_grpc as pb_grpc

RECOVERED = 0.9
"""The share of its rate before that counts as recovered."""
WINDOW_S = 2.0
"""The window the recovered rate is taken over."""
WARM_TRAIN_STEPS = 2
"""Train steps the learner applies before the first measurement (the first one traces the train step)."""
OWN_CONNECTION = ("grpc.use_local_subchannel_pool", 1)
"""A channel option: its own connection (channels to one address share one by default)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclasses.dataclass
class Child:
    """An ``aioseed`` child process whose output goes to a file."""

    args: list[str]
    log: pathlib.Path
    process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.log.open("ab") as out:
            env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONUNBUFFERED": "1"}
            self.process = await asyncio.create_subprocess_exec(sys.executable, "-m", "aioseed", *self.args, stdout=out, stderr=out, env=env)

    def rss_mib(self) -> float:
        for line in pathlib.Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    async def stop(self, timeout_s: float = 60.0) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), timeout_s)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


class Rig:
    """The learner and the healthy actor, and a sampler of the learner's frame count."""

    def __init__(self, bench: ImpalaHostileBench, workdir: pathlib.Path) -> None:
        self.bench = bench
        self.port, self.console_port = free_port(), free_port()
        self.address = f"127.0.0.1:{self.port}"
        hidden = [str(width) for width in bench.hidden_sizes]
        self.learner = Child(
            ["learner", "--architecture", "impala", "--env", bench.env, "--logdir", str(workdir / "run"),
             "--server.port", str(self.port), "--console.port", str(self.console_port), "--server.shutdown-grace-s", "1", "--metrics-every-s", "0.25",
             "--impala.learning-rate", str(bench.learning_rate), "--impala.hidden-sizes", *hidden],
            workdir / "learner.log",
        )  # fmt: skip
        self.actor = Child(
            ["actor", "--architecture", "impala", "--learner", self.address, "--env", bench.env,
             "--num-envs", str(bench.actor_envs), "--envs-per-message", str(bench.envs_per_message)],
            workdir / "actor.log",
        )  # fmt: skip
        self.samples: list[tuple[float, float, float]] = []
        """(time of the learner's snapshot, its frames, its streams)."""
        self.train_steps = 0.0
        """The learner's train steps at its latest snapshot."""

    async def start_learner(self) -> float:
        """Starts the learner; returns the time it reported SERVING."""
        await self.learner.start()
        async with grpc.aio.insecure_channel(self.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            deadline = time.time() + 300
            while time.time() < deadline:
                with contextlib.suppress(grpc.aio.AioRpcError):
                    reply = await stub.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=1.0)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return time.time()
                if self.learner.process.returncode is not None:
                    raise RuntimeError(f"the learner exited; see {self.learner.log}")
                await asyncio.sleep(0.2)
        raise RuntimeError(f"the learner did not serve within 300 s; see {self.learner.log}")

    async def sample(self) -> None:
        """A task: appends each new snapshot's frames and streams (the learner takes one every 0.25 s)."""
        url = f"http://127.0.0.1:{self.console_port}/api/metrics"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=0.5)) as session:
            while True:
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(url) as reply:
                        metrics = await reply.json()
                    if "time" in metrics and (not self.samples or metrics["time"] > self.samples[-1][0]):
                        self.samples.append((metrics["time"], metrics["charts/frames"], metrics["actors/streams"]))
                        self.train_steps = metrics["learner/train_steps"]
                await asyncio.sleep(0.25)

    async def warm_up(self, train_steps: int = WARM_TRAIN_STEPS, limit_s: float = 300.0) -> None:
        """Until the learner has applied ``train_steps`` train steps, then ``seconds`` more: the first steps
        build (trace) the train function, which holds the GIL for seconds on a small machine, so a rate
        measured before them is not the steady one the attacks are compared with."""
        deadline = time.time() + limit_s
        while self.train_steps < train_steps:
            if time.time() > deadline:
                raise RuntimeError(f"the learner did not train {train_steps} steps within {limit_s:.0f} s; see {self.learner.log}")
            await asyncio.sleep(0.25)
        await asyncio.sleep(self.bench.seconds)

    def rate(self, start: float, end: float) -> float:
        """Frames/s between the samples nearest after ``start`` and before ``end``."""
        inside = [(t, frames) for t, frames, _ in self.samples if start <= t <= end]
        if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
            return 0.0
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])

    async def steady_rate(self) -> float:
        """The actor's steps/s over the next ``seconds``."""
        start = time.time()
        await asyncio.sleep(self.bench.seconds)
        return self.rate(start, time.time())

    async def recovery(self, since: float, baseline: float, limit_s: float = 60.0) -> tuple[float, int]:
        """Seconds from ``since`` until the rate over the last WINDOW_S reaches RECOVERED x ``baseline``
        (nan if not within ``limit_s``), and the most streams the learner held meanwhile."""
        while time.time() < since + limit_s:
            await asyncio.sleep(0.25)
            now = time.time()
            if now - WINDOW_S >= since and self.rate(now - WINDOW_S, now) >= RECOVERED * baseline:
                return now - since, self.max_streams(since)
        return float("nan"), self.max_streams(since)

    def max_streams(self, since: float) -> int:
        return int(max((streams for t, _, streams in self.samples if t >= since), default=0))


async def pull_loop(address: str, counts: dict[str, int]) -> None:
    """A task: a healthy client pulling the full parameters, one download after another."""
    async with grpc.aio.insecure_channel(address, options=[OWN_CONNECTION]) as channel:
        stub = pb_grpc.LearnerStub(channel)
        while True:
            try:
                async for _ in stub.GetParams(pb.ParamsRequest(have_version=-1), timeout=30):
                    pass
                counts["pulls"] += 1
            except grpc.aio.AioRpcError as error:
                counts[error.code().name] = counts.get(error.code().name, 0) + 1
                await asyncio.sleep(0.05)


async def stall_downloads(address: str, connections: int, calls: int) -> None:
    """A task: ``connections`` connections, each holding ``calls`` downloads it never reads (its receive
    window stays at 64 KiB: no BDP probing to widen it); a download the learner ends is asked again."""
    options = [OWN_CONNECTION, ("grpc.http2.bdp_probe", 0)]
    async with contextlib.AsyncExitStack() as stack:
        stubs = [pb_grpc.LearnerStub(await stack.enter_async_context(grpc.aio.insecure_channel(address, options=options))) for _ in range(connections)]
        held: list[list[grpc.aio.UnaryStreamCall]] = [[] for _ in stubs]
        try:
            while True:
                for stub, mine in zip(stubs, held, strict=True):
                    mine[:] = [call for call in mine if not call.done()]
                    mine += [stub.GetParams(pb.ParamsRequest(have_version=-1)) for _ in range(calls - len(mine))]
                await asyncio.sleep(0.5)
        finally:
            for call in (call for mine in held for call in mine):
                call.cancel()


async def flood_uploads(address: str, spec: pb.EnvSpec, message_bytes: int, counts: dict[str, int], stream: int) -> None:
    """A task: one connection uploading ``message_bytes`` messages one after another, each on a fresh
    stream; each is refused once the learner has taken it in (a column of the wrong size). The upload is
    encoded once, so the flood costs this process little CPU beside the learner's."""
    options = [OWN_CONNECTION, ("grpc.max_send_message_length", 2 * message_bytes), ("grpc.max_receive_message_length", 2**20)]
    column = pb.Column(name="observation", dtype="<f4", data=bytes(message_bytes - 1024))
    async with grpc.aio.insecure_channel(address, options=options) as channel:
        learn = channel.stream_stream(f"/{SERVICE_NAME}/Learn", request_serializer=None, response_deserializer=pb.LearnerMessage.FromString)
        run_id = 1
        while True:
            run_id += 1
            hello = pb.Hello(spec=spec, num_envs=1, run_ids=[(stream << 32) + run_id], actor_name=f"flood/{stream}")
            call = learn()
            try:
                await call.write(pb.ActorMessage(hello=hello).SerializeToString())
                welcome = await call.read()
                slots = welcome.welcome.slots[0].to_bytes(4, "little")
                upload = pb.ActorMessage(unrolls=pb.Unrolls(slots=slots, columns=[column])).SerializeToString()
                while True:
                    await call.write(upload)
                    if await call.read() is grpc.aio.EOF:
                        break
            except grpc.aio.AioRpcError:
                pass
            code = await call.code()
            counts[code.name] = counts.get(code.name, 0) + 1
            call.cancel()


async def stalled_pulls(rig: Rig) -> dict[str, object]:
    bench = rig.bench
    before, during, after = {"pulls": 0}, {"pulls": 0}, {"pulls": 0}
    rates = []
    for counts, attack in ((before, False), (during, True), (after, False)):
        async with asyncio.TaskGroup() as group:
            puller = group.create_task(pull_loop(rig.address, counts))
            attacker = group.create_task(stall_downloads(rig.address, bench.stalled_connections, bench.calls_per_connection)) if attack else None
            if attack:
                await asyncio.sleep(1.0)  # the stalled downloads take their slots first
                counts["pulls"] = 0
            steps = await rig.steady_rate()
            puller.cancel()
            if attacker is not None:
                attacker.cancel()
        rates.append((counts["pulls"] / bench.seconds, steps))
    baseline = (rates[0][0] + rates[2][0]) / 2
    return {
        "test": "stalled_pulls",
        "stalled_downloads": bench.stalled_connections * bench.calls_per_connection,
        "pulls_per_s_before": round(rates[0][0], 2),
        "pulls_per_s_during": round(rates[1][0], 2),
        "pulls_per_s_after": round(rates[2][0], 2),
        "pull_rate_kept": round(rates[1][0] / baseline, 3) if baseline else float("nan"),
        "refused_during": {code: n for code, n in during.items() if code != "pulls"},
        "actor_steps_per_s_before": round(rates[0][1]),
        "actor_steps_per_s_during": round(rates[1][1]),
    }


async def upload_flood(rig: Rig) -> dict[str, object]:
    from aioseed.envs.registry import env_spec

    bench = rig.bench
    spec = env_spec(bench.env).to_proto()
    rss_before = rig.learner.rss_mib()
    before = await rig.steady_rate()
    counts: dict[str, int] = {}
    peak = rss_before
    async with asyncio.TaskGroup() as group:
        floods = [group.create_task(flood_uploads(rig.address, spec, bench.flood_message_bytes, counts, i)) for i in range(bench.flood_streams)]
        measured = group.create_task(rig.steady_rate())
        while not measured.done():
            peak = max(peak, rig.learner.rss_mib())
            await asyncio.sleep(0.05)
        for flood in floods:
            flood.cancel()
    return {
        "test": "upload_flood",
        "streams": bench.flood_streams,
        "message_mib": round(bench.flood_message_bytes / 2**20, 1),
        "uploads_refused": counts,
        "rss_mib_before": round(rss_before),
        "rss_mib_peak": round(peak),
        "actor_steps_per_s_before": round(before),
        "actor_steps_per_s_during": round(measured.result()),
        "actor_rate_kept": round(measured.result() / before, 3) if before else float("nan"),
    }


async def stall(rig: Rig) -> dict[str, object]:
    before = await rig.steady_rate()
    rig.learner.process.send_signal(signal.SIGSTOP)
    await asyncio.sleep(rig.bench.stall_s)
    rig.learner.process.send_signal(signal.SIGCONT)
    seconds, streams = await rig.recovery(time.time(), before)
    return {"test": "stall", "stopped_s": rig.bench.stall_s, "actor_steps_per_s_before": round(before), **recovered(rig, seconds, streams)}


async def restart(rig: Rig) -> dict[str, object]:
    before = await rig.steady_rate()
    stopped = time.time()
    await rig.learner.stop()
    serving = await rig.start_learner()
    seconds, streams = await rig.recovery(serving, before)
    return {
        "test": "restart",
        "learner_down_s": round(serving - stopped, 1),
        "actor_steps_per_s_before": round(before),
        **recovered(rig, seconds, streams),
    }


def recovered(rig: Rig, seconds: float, streams: int) -> dict[str, object]:
    return {
        "recovered_s": round(seconds, 2),
        "recovered_to": RECOVERED,
        "max_streams_after": streams,
        "actor_streams": rig.bench.actor_envs // rig.bench.envs_per_message,
        "actor_envs": rig.bench.actor_envs,
    }


async def measure(bench: ImpalaHostileBench) -> list[dict[str, object]]:
    with contextlib.ExitStack() as stack:
        workdir = bench.workdir or pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="impala-hostile-")))
        workdir.mkdir(parents=True, exist_ok=True)
        rig = Rig(bench, workdir)
        async with asyncio.TaskGroup() as group:
            sampler = group.create_task(rig.sample())
            try:
                await rig.start_learner()
                await rig.actor.start()
                await rig.warm_up()
                rows = [await test(rig) for test in (stalled_pulls, upload_flood, stall, restart)]
            finally:
                sampler.cancel()
                await rig.actor.stop()
                await rig.learner.stop()
    return rows


def main(config: ImpalaHostileBench) -> int:
    import uvloop

    rows = uvloop.run(measure(config))
    for row in rows:
        print(json.dumps(row) if config.json else "  ".join(f"{key}={value}" for key, value in row.items()))
    return 0
