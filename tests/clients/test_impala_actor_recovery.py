"""An IMPALA-mode actor whose parameter pulls fail after its stream connected: it ends the stream it
opened, waits longer each time, and is back to uploading once pulls succeed again."""

from __future__ import annotations

import asyncio
import dataclasses

import grpc
from tests.server.transport.test_impala_mode import TOKEN, impala_config
from tests.waiting import until

from aioseed.clients.actor import ActorConfig
from aioseed.impala_actor.actor import ImpalaActor
from aioseed.proto import aioseed_pb2 as pb
from aioseed.proto import aioseed_pb2_grpc as pb_grpc

STALL_S = 3.0
STALLER = [("grpc.use_local_subchannel_pool", 1), ("grpc.http2.bdp_probe", 0)]
"""Options of a client that never reads: its own connection, with gRPC's initial 64 KiB flow-control
window (no BDP probing widens it)."""


def one_download_slot(tmp_path):
    """A learner serving one parameter download at a time, with weights (~4 MiB) that a client which never
    reads cannot take in; that download keeps the slot (it never counts as stalled)."""
    server = {"max_params_calls": 1, "params_stall_s": 600.0}
    config = impala_config(tmp_path, server=server, training={"batch_size": 4, "unroll_length": 5})
    return dataclasses.replace(config, impala=dataclasses.replace(config.impala, hidden_sizes=(1024, 1024)))


async def test_failing_pulls_back_off_hold_no_stream_and_recover(running_learner, tmp_path) -> None:
    # While the staller holds the one download slot, every other pull fails.
    async with running_learner(one_download_slot(tmp_path)) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}", options=STALLER) as staller:
        stalled = pb_grpc.LearnerStub(staller).GetParams(pb.ParamsRequest(have_version=-1), metadata=TOKEN)
        await stalled.initial_metadata()  # the learner is sending: the one download slot is taken
        actor = ImpalaActor(
            ActorConfig(
                learner=f"127.0.0.1:{learner.port}", num_envs=4, envs_per_message=2, token="s3cret", architecture="impala",
                backoff_initial_s=0.05, backoff_max_s=0.5,
            )
        )
        task = asyncio.create_task(actor.run())
        try:
            held = []
            for _ in range(int(STALL_S / 0.1)):  # every pull is refused (RESOURCE_EXHAUSTED) meanwhile
                await asyncio.sleep(0.1)
                held.append(len(learner._service.streams))
            assert actor.uploads == 0 and actor.connects >= 4
            # Without the backoff: hundreds of sessions per group in 3 s (1,024 in 4 s in the run);
            # with it, at most 1 + 3 s / the mean wait of its first attempts (~16 here) for each of the 2 groups.
            assert actor.connects <= 2 * 25, actor.connects
            # The failed session's Learn call is ended: the learner never holds more streams than the actor's groups.
            assert max(held) <= len(actor.groups), held
            stalled.cancel()
            await until(lambda: actor.uploads >= 8, "uploads once pulls succeed again", 3000)
            # Each group reconnects after its own backoff: both are back, one stream each.
            await until(lambda: len(learner._service.streams) == len(actor.groups), "both groups streaming again", 3000)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_a_pull_turned_away_while_the_learner_is_busy_is_retried_without_losing_the_session(running_learner, tmp_path) -> None:
    """gRPC's retry policy (PULL_RETRIES) asks again for a pull refused with RESOURCE_EXHAUSTED: once the
    slot frees, the actor carries on in the sessions it opened first."""
    async with running_learner(one_download_slot(tmp_path)) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}", options=STALLER) as staller:
        stalled = pb_grpc.LearnerStub(staller).GetParams(pb.ParamsRequest(have_version=-1), metadata=TOKEN)
        await stalled.initial_metadata()
        actor = ImpalaActor(
            ActorConfig(learner=f"127.0.0.1:{learner.port}", num_envs=4, envs_per_message=2, token="s3cret", architecture="impala")
        )
        task = asyncio.create_task(actor.run())
        try:
            refusals = learner._service.refusals.counts
            await until(lambda: refusals["RESOURCE_EXHAUSTED"] >= 1, "the actor's first pull to be turned away", 3000)
            stalled.cancel()
            await until(lambda: actor.uploads >= 8, "uploads once the slot is free", 3000)
            assert actor.connects == len(actor.groups)  # no session was given up
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
