"""The Ray fleet's config: one actor config per Ray actor, each with its own name and seed range;
the learner's health as the fleet sees it."""

from __future__ import annotations

import pytest
from tests.conftest import small_config

from aioseed.cli import parse
from aioseed.clients.actor import ActorConfig
from aioseed.clients.fleet import FleetConfig, learner_serving


def test_each_actor_gets_a_name_and_a_seed_range_of_its_own() -> None:
    config = FleetConfig(num_actors=3, actor=ActorConfig(num_envs=16, seed=100))
    actors = config.actor_configs()
    assert [a.name for a in actors] == ["ray-0", "ray-1", "ray-2"]
    assert [a.seed for a in actors] == [100, 116, 132]  # envs seed, seed + 1, ...: no two alike
    assert all(a.num_envs == 16 for a in actors)
    assert [a.seed for a in FleetConfig(num_actors=2).actor_configs()] == [None, None]


def test_the_command_line_builds_the_fleet() -> None:
    command = parse(["actors", "--ray", "auto", "--num-actors", "64", "--cpus-per-actor", "2",
                     "--actor.learner", "A:8686", "--actor.num-envs", "32", "--actor.token", "SECRET"])
    assert isinstance(command, FleetConfig)
    assert (command.ray, command.num_actors, command.cpus_per_actor) == ("auto", 64, 2.0)
    assert (command.actor.learner, command.actor.num_envs, command.actor.token) == ("A:8686", 32, "SECRET")


@pytest.mark.parametrize("bad", [{"num_actors": 0}, {"cpus_per_actor": 0.0}, {"learner_gone_s": -1.0}, {"max_restarts": -2}])
def test_impossible_fleets_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        FleetConfig(**bad)


async def test_the_fleet_sees_a_serving_learner_and_one_that_is_gone(tmp_path, running_learner) -> None:
    config = small_config(tmp_path, server={"token": "SECRET"})
    async with running_learner(config) as learner:
        address = f"127.0.0.1:{learner.port}"
        assert await learner_serving(ActorConfig(learner=address, token="SECRET"))
        assert await learner_serving(ActorConfig(learner=address))  # health is public, as for load balancers
    assert not await learner_serving(ActorConfig(learner=address, token="SECRET"), timeout_s=0.5)


async def test_a_run_whose_fleet_members_are_all_done_or_given_up_stops_its_learner() -> None:
    """aioseed run --launcher ray waited forever for frames from members that were given up."""
    from types import SimpleNamespace

    from aioseed.local_actors import ACTORS_EXITED, watch_fleet

    class Fleet:  # a fake of RayFleet's wait: one member given up (1), one refused (2); an evaluation one runs on
        configs = [ActorConfig(name="ray-0"), ActorConfig(name="eval", evaluation=True), ActorConfig(name="ray-1")]

        async def wait(self, which: list[int]) -> list[int]:
            assert which == [0, 2]  # the evaluation actor does not keep the run going
            return [1, 2]

    stops: list[str] = []
    learner = SimpleNamespace(stopping=SimpleNamespace(reason=None), request_stop=stops.append)
    await watch_fleet(Fleet(), learner)
    assert stops == [ACTORS_EXITED]
    learner.stopping.reason = "stop.after_frames"  # a stop under way (which ends the members) is left alone
    await watch_fleet(Fleet(), learner)
    assert stops == [ACTORS_EXITED]


@pytest.mark.parametrize("members_end", [True, False])
async def test_the_ray_launcher_watches_its_fleet_and_stops_the_watch_before_the_fleet(monkeypatch, members_end: bool) -> None:
    """aioseed run --launcher ray: members all given up stop the learner; a stop ends the watch first, so the
    members it ends are not taken for given up."""
    import asyncio
    from types import SimpleNamespace

    from aioseed import launch
    from aioseed.clients import fleet as fleets
    from aioseed.local_actors import ACTORS_EXITED

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

    monkeypatch.setattr(fleets, "RayFleet", FakeFleet)
    run = parse(["run", "--launcher", "ray", "--num-actors", "2"])
    learner = SimpleNamespace(stopping=SimpleNamespace(reason=None), request_stop=events.append)
    async with asyncio.timeout(10), asyncio.TaskGroup() as group:  # a watch left running would hold the group open
        stop = await launch.launch_actors(run, run.actor_configs(port=1), learner, group)
        await asyncio.sleep(0.01)  # the watch's turn
        await stop()
    assert events == (["start", ACTORS_EXITED, "stop"] if members_end else ["start", "stop"])
