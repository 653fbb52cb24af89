"""The Ray fleet's config: one actor config per Ray actor, each with its own name and seed range;
the learner's health as the fleet sees it."""

from __future__ import annotations

import pytest

from aioseed.cli import parse
from aioseed.clients.actor import ActorConfig
from aioseed.clients.fleet import FleetConfig, learner_serving
from tests.conftest import small_config


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
