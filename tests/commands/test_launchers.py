"""aioseed run's launch strategies: a spawn that fails part-way leaves none of the others running; a Ray
fleet's watch stops the learner once its members are done, and is stopped before the fleet."""

from __future__ import annotations

import pytest

from aioseed.cli import parse
from aioseed.clients.actor import ActorConfig
from aioseed.commands.launchers import processes


def test_a_spawn_that_fails_stops_the_actors_already_started(monkeypatch) -> None:
    started: list[FakeProcess] = []

    class FakeProcess:  # multiprocessing's Process verbs; the third cannot start (out of processes)
        def __init__(self, target, args, name) -> None:
            self.name, self.alive = name, False

        def start(self) -> None:
            if len(started) == 2:
                raise OSError("[Errno 11] Resource temporarily unavailable")
            self.alive = True
            started.append(self)

        def is_alive(self) -> bool:
            return self.alive

        def terminate(self) -> None:
            self.alive = False

        def join(self, timeout=None) -> None:
            pass

    class Context:
        Process = FakeProcess

    monkeypatch.setattr(processes.multiprocessing, "get_context", lambda method: Context())
    with pytest.raises(OSError, match="Resource temporarily unavailable"):
        processes.start_actors([ActorConfig(name=f"actor-{i}") for i in range(3)])
    assert [p.name for p in started] == ["actor-0", "actor-1"] and not any(p.is_alive() for p in started)


async def test_a_run_whose_fleet_members_are_all_done_or_given_up_stops_its_learner() -> None:
    """aioseed run --launcher ray waited forever for frames from members that were given up."""
    from types import SimpleNamespace

    from aioseed.commands.launchers.ray_fleet import watch
    from aioseed.commands.launchers.stop import ACTORS_EXITED

    class Fleet:  # a fake of RayFleet's wait: one member given up (1), one refused (2); an evaluation one runs on
        configs = [ActorConfig(name="ray-0"), ActorConfig(name="eval", evaluation=True), ActorConfig(name="ray-1")]

        async def wait(self, which: list[int]) -> list[int]:
            assert which == [0, 2]  # the evaluation actor does not keep the run going
            return [1, 2]

    stops: list[str] = []
    learner = SimpleNamespace(stopping=SimpleNamespace(reason=None), request_stop=stops.append)
    await watch(Fleet(), learner)
    assert stops == [ACTORS_EXITED]
    learner.stopping.reason = "stop.after_frames"  # a stop under way (which ends the members) is left alone
    await watch(Fleet(), learner)
    assert stops == [ACTORS_EXITED]


@pytest.mark.parametrize("members_end", [True, False])
async def test_the_ray_launcher_watches_its_fleet_and_stops_the_watch_before_the_fleet(monkeypatch, members_end: bool) -> None:
    """aioseed run --launcher ray: members all given up stop the learner; a stop ends the watch first, so the
    members it ends are not taken for given up."""
    import asyncio
    from types import SimpleNamespace

    from aioseed.commands.launchers import launch_actors, ray_fleet
    from aioseed.commands.launchers.stop import ACTORS_EXITED

    events: list[str] = []

    class FakeFleet:  # RayFleet's verbs, without Ray
        def __init__(self, configs, *args, **kwargs) -> None:
            self.configs = configs

        async def start(self) -> None:
            events.append("start")

        async def wait(self, which) -> list[int]:
            if not members_end:
                await asyncio.Event().wait()  # running until stopped
            return [1] * len(which)

        async def stop(self) -> None:
            events.append("stop")

    monkeypatch.setattr(ray_fleet, "RayFleet", FakeFleet)
    run = parse(["run", "--launcher", "ray", "--num-actors", "2"])
    learner = SimpleNamespace(stopping=SimpleNamespace(reason=None), request_stop=events.append)
    async with asyncio.timeout(10), asyncio.TaskGroup() as group:  # a watch left running would hold the group open
        stop = await launch_actors(run.launch_strategy, run.actor_configs(port=1), learner, group)
        await asyncio.sleep(0.01)  # the watch's turn
        await stop()
    assert events == (["start", ACTORS_EXITED, "stop"] if members_end else ["start", "stop"])
