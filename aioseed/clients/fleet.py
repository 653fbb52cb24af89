"""Actor fleets on Ray: ``aioseed actor`` processes as Ray actors, pointed at one learner.

Ray does the process management: it places each actor where ``cpus_per_actor`` CPUs are free,
restarts one whose process dies (``max_restarts``) and retries the run it was doing on the new
process (``max_task_retries``), streams the actors' logs to this driver (and keeps them under the
session's ``logs/``), and shows them on its dashboard. A restarted actor is a new process: its
envs start new episodes under fresh run_ids, so the learner resets their recurrent state and drops
their partial unrolls (SEED's run_id rule) and gives the old slots to others after their grace period.

The fleet stops on SIGINT/SIGTERM, when every actor has finished (``--actor.max-steps``), or when
the learner has stopped answering its health check for ``learner_gone_s``. Ray itself is an
optional dependency: ``pip install 'aioseed[ray]'``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import signal
import socket
import time
from collections.abc import Sequence
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc

from aioseed.clients.actor import Actor, ActorConfig, exit_code, open_channel
from aioseed.proto import SERVICE_NAME

log = structlog.get_logger()

@dataclasses.dataclass(frozen=True)
class FleetConfig:
    """``aioseed actors``: N actor processes started on a Ray cluster, all streaming to one learner."""

    ray: str = "local"
    """Ray cluster: local (start one on this machine), auto (the cluster this machine joined with
    ``ray start``), or an address such as HEAD:6379 or ray://HEAD:10001."""
    num_actors: int = 2
    """Actor processes (Ray actors), each with ``actor.num_envs`` environments."""
    cpus_per_actor: float = 1.0
    """Ray CPUs each actor reserves: Ray places an actor only where they are free."""
    max_restarts: int = 20
    """Times Ray restarts an actor whose process died or whose env raised, over the actor's lifetime (Ray's
    count). Past them the actor is given up (``fleet_member_given_up`` in the log), the others go on, and the
    command exits 1 once none is left: an env that always raises would otherwise restart forever. -1: always
    (for fleets that run for days on nodes that come and go)."""
    dashboard: bool = True
    """With ray=local: serve Ray's dashboard (its URL is logged)."""
    learner_gone_s: float = 60.0
    """Stop the fleet once the learner's health check has failed this long (0: never)."""
    actor: ActorConfig = ActorConfig()
    """What each actor runs; every actor gets its own seed range and name."""

    def __post_init__(self) -> None:
        if self.num_actors < 1:
            raise ValueError(f"num_actors must be >= 1, got {self.num_actors}")
        if not self.cpus_per_actor > 0:
            raise ValueError(f"cpus_per_actor must be positive, got {self.cpus_per_actor}")
        if self.max_restarts < -1:
            raise ValueError(f"max_restarts must be >= -1 (-1: always), got {self.max_restarts}")
        if self.learner_gone_s < 0:
            raise ValueError(f"learner_gone_s must be >= 0, got {self.learner_gone_s}")
        if self.actor.architecture != "seed":
            raise ValueError("Ray fleets run SEED actors; start IMPALA-mode actors with aioseed actor --architecture impala")

    def actor_configs(self) -> list[ActorConfig]:
        actor = self.actor
        return [
            dataclasses.replace(
                actor,
                name=f"{actor.name or 'ray'}-{i}",
                seed=None if actor.seed is None else actor.seed + i * actor.num_envs,
            )
            for i in range(self.num_actors)
        ]


class FleetMember:
    """One ``aioseed actor`` inside a Ray worker process (made a Ray actor by ``RayFleet``)."""

    def __init__(self, config: ActorConfig, level: str) -> None:
        from aioseed import log as logging_setup

        logging_setup.configure(level)
        self.config = dataclasses.replace(config, name=f"{config.name}@{socket.gethostname()}:{os.getpid()}")
        self._actor = Actor(self.config)
        self._task: asyncio.Task | None = None
        first = int(self._actor.run_ids[0])
        log.info("fleet_member_started", member=config.name, pid=os.getpid(), first_run_id=f"{first:016x}")

    async def run(self) -> int:
        """Steps and streams until done or stopped: 0, or 2 when the learner refused the actor. Any other failure
        (an env that raises) ends this process, which Ray restarts (``max_restarts``) and runs again: raised to
        the driver instead, it stopped the whole fleet."""
        self._task = asyncio.current_task()
        try:
            return await exit_code(self._actor)
        except Exception:
            log.exception("fleet_member_failed", member=self.config.name)
            os._exit(1)

    async def stop(self) -> None:
        """Ends the run: its streams close, and the learner frees the slots."""
        if self._task is not None:
            self._task.cancel()

    def identity(self) -> dict[str, Any]:
        """This process's pid, name and env run_ids (new after a restart)."""
        return {"pid": os.getpid(), "name": self.config.name, "run_ids": [int(r) for r in self._actor.run_ids]}


class RayFleet:
    """Verbs: ``start`` the actors on Ray, ``wait`` for them, ``stop`` them all."""

    def __init__(
        self,
        configs: Sequence[ActorConfig],
        address: str = "local",
        cpus_per_actor: float = 1.0,
        max_restarts: int = FleetConfig.max_restarts,
        dashboard: bool = False,
        level: str = "info",
    ) -> None:
        self.configs = list(configs)
        self._address = address
        self._cpus = cpus_per_actor
        self._max_restarts = max_restarts
        self._dashboard = dashboard
        self._level = level
        self._ray: Any = None
        self._started_ray = False
        self.members: list[Any] = []
        self._runs: list[Any] = []
        self.dashboard_url: str | None = None

    async def start(self) -> float:
        """Connects to (or starts) Ray and starts every actor; returns the seconds until all run."""
        started = time.perf_counter()
        try:
            import ray
        except ImportError:
            raise RuntimeError("Ray is not installed: pip install 'aioseed[ray]'") from None
        self._ray = ray
        if not ray.is_initialized():
            await asyncio.to_thread(self._init_ray)
        ray_seconds = time.perf_counter() - started
        remote = ray.remote(FleetMember).options(
            num_cpus=self._cpus, max_restarts=self._max_restarts, max_task_retries=-1
        )
        self.members = [remote.remote(config, self._level) for config in self.configs]
        # Every actor has built its envs once it answers.
        await asyncio.gather(*(member.identity.remote() for member in self.members))
        self._runs = [member.run.remote() for member in self.members]
        seconds = time.perf_counter() - started
        log.info(
            "fleet_started", actors=len(self.members), ray=self._address, ray_s=round(ray_seconds, 2),
            ready_s=round(seconds, 2), cpus_per_actor=self._cpus, dashboard=self.dashboard_url,
        )
        return seconds

    def _init_ray(self) -> None:
        ray = self._ray
        if self._address == "local":
            cpus = max(os.cpu_count() or 1, math.ceil(self._cpus * len(self.configs)))
            context = ray.init(num_cpus=cpus, include_dashboard=self._dashboard, log_to_driver=True)
        else:
            context = ray.init(address=self._address, log_to_driver=True)
        self._started_ray = True
        self.dashboard_url = getattr(context, "dashboard_url", None) or None

    async def wait(self, which: Sequence[int] | None = None) -> list[int]:
        """The exit code of each actor (or of those ``which`` indexes), once all have finished (``max_steps``), been
        refused (2) or given up (1)."""
        which = range(len(self._runs)) if which is None else which
        return list(await asyncio.gather(*(self._outcome(self.configs[i], self._runs[i]) for i in which)))

    async def _outcome(self, config: ActorConfig, run: Any) -> int:
        try:
            return await run
        except self._ray.exceptions.RayError as exc:  # its restarts are spent (ActorDiedError), or Ray could not run it
            log.error(
                "fleet_member_given_up", member=config.name, max_restarts=self._max_restarts, error=type(exc).__name__,
                detail=str(exc)[:300],
            )
            return 1

    async def identities(self) -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(member.identity.remote() for member in self.members)))

    async def stop(self, grace_s: float = 5.0) -> None:
        """Asks every actor to end its streams, then ends the actor processes (and Ray, if started here)."""
        ray = self._ray
        if ray is None:
            return
        if self.members:
            stops = [member.stop.remote() for member in self.members]
            await asyncio.wait([asyncio.ensure_future(ref) for ref in (*stops, *self._runs)], timeout=grace_s)
            for member in self.members:
                ray.kill(member, no_restart=True)
            self.members, self._runs = [], []
        if self._started_ray:
            await asyncio.to_thread(ray.shutdown)
            self._started_ray = False
        log.info("fleet_stopped")


async def learner_serving(actor: ActorConfig, timeout_s: float = 2.0) -> bool:
    """Whether the learner ``actor`` streams to answers its health check with SERVING."""
    token = actor.learner_token
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    try:
        async with open_channel(actor) as channel:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), metadata=metadata, timeout=timeout_s
            )
    except grpc.aio.AioRpcError:
        return False
    return reply.status == health_pb2.HealthCheckResponse.SERVING


async def watch_learner(actor: ActorConfig, gone_s: float, every_s: float = 2.0) -> None:
    """Returns once the learner has failed its health check for ``gone_s`` seconds in a row."""
    since: float | None = None
    while True:
        if await learner_serving(actor):
            since = None
        else:
            since = since if since is not None else time.monotonic()
            if time.monotonic() - since >= gone_s:
                log.info("learner_gone", learner=actor.learner, seconds=gone_s)
                return
        await asyncio.sleep(every_s)


async def run_fleet(config: FleetConfig, level: str = "info") -> int:
    """``aioseed actors``: runs the fleet until SIGINT/SIGTERM, the learner is gone, or all actors finish."""
    fleet = RayFleet(
        config.actor_configs(), address=config.ray, cpus_per_actor=config.cpus_per_actor, max_restarts=config.max_restarts,
        dashboard=config.dashboard, level=level,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await fleet.start()
        async with asyncio.TaskGroup() as group:
            waiters = [group.create_task(stop.wait()), group.create_task(fleet.wait())]
            if config.learner_gone_s > 0:
                waiters.append(group.create_task(watch_learner(config.actor, config.learner_gone_s)))
            done, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
        codes = waiters[1].result() if waiters[1] in done else []
    finally:
        await fleet.stop()
    return max(codes, default=0)
