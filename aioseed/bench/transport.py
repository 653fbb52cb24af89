"""``aioseed bench transport``: the real learner (null env, trivial model) against a raw grpc.aio echo.

For each (streams, K) the same client code drives two servers in separate
processes: a raw grpc.aio echo server (bytes in, pre-serialized bytes out, no
parsing) and the aioseed learner with ``NullAgent`` (validation, batcher,
inference thread, per-env state, unroll store, queue and train task all run).
Message sizes are equal on both. Clients run in their own process(es).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import multiprocessing
import os
import pathlib
import sys
import time
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING

import numpy as np

from aioseed.bench.children import ended, reported
from aioseed.bench.load_config import TransportBench
from aioseed.proto import aioseed_pb2 as pb
from aioseed.server.batching.batcher import BatcherConfig
from aioseed.spec import EnvSpec

if TYPE_CHECKING:
    from aioseed.server.config import ConsoleConfig, ServerConfig
    from aioseed.server.learner import Learner

SPEC = EnvSpec(observation_shape=(4,), observation_dtype="float32", action_space=2)
METHOD = "/aioseed.v1.Learner/Act"
WARMUP_S = 1.0


@dataclasses.dataclass(frozen=True)
class Trial:
    server: str  # "echo" | "learner"
    streams: int
    k: int
    seconds: float
    client_processes: int
    batcher: BatcherConfig
    agent: str = "null"  # "null" (no model) | "mlp" (V-trace's CartPole MLP, training for real)
    warmup_s: float = WARMUP_S
    checkpoint: str | None = None
    """server "serve" (aioseed serve) or "paused" (a learner restored from it, training paused): a CartPole run."""
    evaluation: bool = False
    """The clients' streams are evaluation envs (acted on, never stored)."""


# ---- servers (each in its own spawned process) -------------------------------------------
def _serve(trial: Trial, ready: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    import uvloop

    from aioseed import log as logging_setup
    from aioseed.tf_start import start_tensorflow

    logging_setup.configure("warning")
    start_tensorflow()
    uvloop.run(_serve_async(trial, ready, stop))


def process_rss_mib() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


async def _serve_async(trial: Trial, ready, stop) -> None:
    server, k, streams = trial.server, trial.k, trial.streams
    import grpc

    loop = asyncio.get_running_loop()
    if server == "echo":
        welcome = pb.LearnerMessage(welcome=pb.Welcome(slots=list(range(k)))).SerializeToString()
        actions = pb.LearnerMessage(actions=pb.Actions(actions=np.zeros(k, "<i4").tobytes())).SerializeToString()

        async def echo(request_iterator, context):
            first = True
            async for _ in request_iterator:
                yield welcome if first else actions
                first = False

        handler = grpc.method_handlers_generic_handler(
            "aioseed.v1.Learner", {"Act": grpc.stream_stream_rpc_method_handler(echo)}
        )
        from aioseed.server.transport.endpoint import server_options

        grpc_server = grpc.aio.server(options=server_options(streams, 64 * 1024 * 1024))
        grpc_server.add_generic_rpc_handlers((handler,))
        port = grpc_server.add_insecure_port("127.0.0.1:0")
        await grpc_server.start()
        ready.put(port)
        await loop.run_in_executor(None, stop.wait)
        await grpc_server.stop(0)
        return

    from aioseed.server.config import ConsoleConfig, ServerConfig

    server = ServerConfig(
        host="127.0.0.1", port=0, max_envs=streams * k, max_envs_per_stream=k, max_streams=streams, max_envs_per_actor=streams * k
    )
    learner = _learner(trial, server, ConsoleConfig(enabled=False))
    port = await learner.start()
    if trial.server == "paused":
        learner.pause()
    ready.put(port)
    run = asyncio.create_task(learner.run())
    rss: list[tuple[float, float]] = []

    async def sample_rss() -> None:
        started = time.monotonic()
        while True:
            rss.append((time.monotonic() - started, process_rss_mib()))
            await asyncio.sleep(1.0)

    cpu: list[tuple[float, float]] = []

    async def sample_cpu() -> None:  # (monotonic time, CPU seconds of this process): the clients' clock is the same
        while True:
            cpu.append((time.monotonic(), time.process_time()))
            await asyncio.sleep(0.1)

    sampler, cpu_sampler = asyncio.create_task(sample_rss()), asyncio.create_task(sample_cpu())
    await loop.run_in_executor(None, stop.wait)
    sampler.cancel()
    cpu_sampler.cancel()
    snapshots = [s for s in learner.series() if s["batcher/batches"] > 0]
    keys = ("batcher/batch_size", "batcher/fill_ms_p50", "inference/ms")
    report = {key: float(np.nanmean([s[key] for s in snapshots])) if snapshots else math.nan for key in keys}
    report.update(rss=rss, cpu=cpu, open_fds=len(os.listdir("/proc/self/fd")), train_steps=learner.train_steps)
    ready.put(report)
    learner.request_stop()
    await run


def _learner(trial: Trial, server: ServerConfig, console: ConsoleConfig) -> Learner:
    """The learner of ``trial.server``: "learner" (``trial.agent`` on a fresh CartPole network, training), "serve"
    (``aioseed serve`` of ``trial.checkpoint``) or "paused" (a learner restored from it, paused by the caller)."""
    import dataclasses

    from aioseed.compose.config import LearnerConfig
    from aioseed.compose.learner import assemble
    from aioseed.server.config import StopConfig

    if trial.server == "serve":
        from aioseed.commands import serve

        config = serve.ServeConfig(pathlib.Path(trial.checkpoint), server=server, batcher=trial.batcher, console=console, log_every_s=3600.0)
        return serve.build(config)[0]
    if trial.server == "paused":
        from aioseed.compose import config_file
        from aioseed.compose.learner import build

        saved = config_file.saved_learner(pathlib.Path(trial.checkpoint))
        return build(dataclasses.replace(
            saved, server=server, batcher=trial.batcher, console=console, log_every_s=3600.0, tensorboard=False, stop=StopConfig()
        ))
    config = LearnerConfig(server=server, logdir=None, console=console, log_every_s=3600.0, batcher=trial.batcher)
    if trial.agent == "mlp":
        from aioseed.algos.impala.agent import ImpalaAgent

        return assemble(config, SPEC, ImpalaAgent(SPEC, config.impala))
    from aioseed.bench.null_agent import NullAgent

    return assemble(config, SPEC, NullAgent(SPEC))


# ---- clients -------------------------------------------------------------------------------
def _client(port: int, streams: int, trial: Trial, results: multiprocessing.Queue, seed: int) -> None:
    import uvloop

    results.put(uvloop.run(_client_async(port, streams, trial, seed)))


async def _client_async(port: int, streams: int, trial: Trial, seed: int) -> dict:
    import grpc

    k = trial.k
    observations = np.zeros((k, *SPEC.observation_shape), SPEC.dtype).tobytes()
    start_at = time.monotonic() + trial.warmup_s
    end_at = start_at + trial.seconds
    latencies: list[float] = []
    counts = [0] * streams

    async def one(channel: grpc.aio.Channel, index: int) -> None:
        call = channel.stream_stream(METHOD, request_serializer=None, response_deserializer=None)()
        run_ids = np.arange(1, k + 1, dtype="<u8") + (seed * 1_000_000 + index) * k
        hello = pb.ActorMessage(
            hello=pb.Hello(spec=SPEC.to_proto(), num_envs=k, run_ids=run_ids.tolist(), actor_name="bench", evaluation=trial.evaluation)
        )
        await call.write(hello.SerializeToString())
        welcome = pb.LearnerMessage.FromString(await call.read())
        request = pb.ActorMessage(
            steps=pb.Steps(
                slots=np.array(welcome.welcome.slots, "<i4").tobytes(),
                run_ids=run_ids.tobytes(),
                rewards=np.zeros(k, "<f4").tobytes(),
                flags=np.zeros(k, np.uint8).tobytes(),
                observations=observations,
            )
        ).SerializeToString()
        clock = time.monotonic
        while True:
            sent = clock()
            if sent >= end_at:
                break
            await call.write(request)
            await call.read()
            done = clock()
            if sent >= start_at:
                counts[index] += 1
                latencies.append(done - sent)
        await call.done_writing()

    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        await asyncio.gather(*(one(channel, i) for i in range(streams)))
    return {"round_trips": sum(counts), "per_stream": counts, "latencies": latencies, "window": (start_at, end_at)}


def run_trial(trial: Trial) -> dict:
    """One server process and its client processes; figures over the measured seconds."""
    context = multiprocessing.get_context("spawn")
    ready, stop, results = context.Queue(), context.Event(), context.Queue()
    server = context.Process(target=_serve, args=(trial, ready, stop), name="bench-server")
    server.start()
    clients: list[BaseProcess] = []
    try:
        port = reported(ready, [server], 120)
        per_process = [trial.streams // trial.client_processes] * trial.client_processes
        per_process[0] += trial.streams - sum(per_process)
        clients = [
            context.Process(target=_client, args=(port, n, trial, results, i), name=f"bench-client-{i}")
            for i, n in enumerate(per_process)
            if n
        ]
        for client in clients:
            client.start()
        outputs = []
        for _ in clients:  # each client reports once; a client that died first ends the trial
            outputs.append(reported(results, clients, trial.warmup_s + trial.seconds + 300))
        stop.set()
        batching = reported(ready, [server], 60) if trial.server != "echo" else None
    finally:
        stop.set()
        ended(*clients, server)
    latencies = np.concatenate([np.asarray(o["latencies"]) for o in outputs]) * 1e3
    round_trips = sum(o["round_trips"] for o in outputs)
    cpu_s = math.nan
    if batching is not None and batching["cpu"]:
        times, seconds = np.asarray(batching["cpu"]).T
        start, end = outputs[0]["window"]
        cpu_s = float(np.interp(end, times, seconds) - np.interp(start, times, seconds))
    return {
        "server_cpu_s": cpu_s,
        "per_stream": np.concatenate([np.asarray(o["per_stream"]) for o in outputs]),
        "round_trips_per_s": round_trips / trial.seconds,
        "p50_ms": float(np.percentile(latencies, 50)) if len(latencies) else float("nan"),
        "p99_ms": float(np.percentile(latencies, 99)) if len(latencies) else float("nan"),
        "batching": batching,
    }


def main(config: TransportBench) -> int:
    for streams in config.streams:
        for k in config.rows_per_message:
            procs = min(config.actor_processes, streams)
            batcher = BatcherConfig(max_batch_size=max(config.max_batch_size, k), deadline_ms=config.deadline_ms)
            echo = run_trial(
                Trial(server="echo", streams=streams, k=k, seconds=config.seconds, client_processes=procs, batcher=batcher)
            )
            learner = run_trial(
                Trial(server="learner", streams=streams, k=k, seconds=config.seconds, client_processes=procs, batcher=batcher)
            )
            row = {
                "streams": streams,
                "rows_per_message": k,
                "steps_per_s": round(learner["round_trips_per_s"] * k),
                "round_trips_per_s": round(learner["round_trips_per_s"]),
                "p50_ms": round(learner["p50_ms"], 3),
                "p99_ms": round(learner["p99_ms"], 3),
                "echo_round_trips_per_s": round(echo["round_trips_per_s"]),
                "echo_p50_ms": round(echo["p50_ms"], 3),
                "ratio_vs_echo": round(learner["round_trips_per_s"] / max(echo["round_trips_per_s"], 1e-9), 3),
                "mean_batch": round(learner["batching"]["batcher/batch_size"], 1),
                "fill_ms_p50": round(learner["batching"]["batcher/fill_ms_p50"], 3),
                "inference_ms": round(learner["batching"]["inference/ms"], 3),
                "max_batch_size": batcher.max_batch_size,
                "deadline_ms": batcher.deadline_ms,
                "client_processes": procs,
                "seconds": config.seconds,
            }
            sys.stdout.write((json.dumps(row) if config.json else _human(row)) + "\n")
            sys.stdout.flush()
    return 0


def _human(row: dict) -> str:
    return (
        f"streams={row['streams']:5d} K={row['rows_per_message']:3d}  steps/s={row['steps_per_s']:9d}  "
        f"rt/s={row['round_trips_per_s']:7d} (echo {row['echo_round_trips_per_s']:7d}, "
        f"ratio {row['ratio_vs_echo']:.2f})  p50={row['p50_ms']:.2f}ms p99={row['p99_ms']:.2f}ms  "
        f"batch={row['mean_batch']} fill p50={row['fill_ms_p50']}ms inference={row['inference_ms']}ms"
    )
