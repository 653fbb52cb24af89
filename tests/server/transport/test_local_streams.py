"""In-process streams (Sebulba): rows as arrays into the learner's batcher, with the slot and stream
bookkeeping of a gRPC stream."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tests.conftest import small_config
from tests.waiting import until

from aioseed.clients.actor import ActorConfig
from aioseed.clients.env_group import env_groups
from aioseed.control import CommandRefused
from aioseed.server.transport.protocol import SpecMismatch


async def test_a_local_stream_gets_actions_and_shows_like_any_stream(tmp_path, running_learner) -> None:
    async with running_learner(small_config(tmp_path)) as learner:
        spec, run_ids, (group,) = env_groups(ActorConfig(num_envs=4, envs_per_message=4, seed=0))
        stream = learner.open_local(spec, group.run_ids, "sebulba-test/0")
        assert learner.connected_envs == 4 and len(stream.slots) == 4
        [listed] = learner.actors()
        assert (listed["actor"], listed["address"], listed["envs"]) == ("sebulba-test/0", "in-process", 4)
        for _ in range(30):
            actions = await stream.act(group.rows(stream.slots))
            assert actions.shape == (4,) and set(actions.tolist()) <= {0, 1}
            group.step(actions)
        await until(lambda: learner.frames >= 100, "the learner to count the in-process frames")
        assert learner.actors()[0]["steps"] == 120
        # The console cannot disconnect it: a cancelled env group would not come back, unlike a remote actor.
        with pytest.raises(CommandRefused, match="cannot reconnect"):
            learner.disconnect(listed["stream"])
        assert (await stream.act(group.rows(stream.slots))).shape == (4,)
        stream.close()
        stream.close()  # once is enough; twice does no harm
        assert learner.actors() == []
        await until(lambda: learner.connected_envs == 0, "the slots to be released")
        # Reopened (after a failed batch), it gets its slots back, as a Hello's previous_slots do.
        other = learner.open_local(spec, env_groups(ActorConfig(num_envs=4, envs_per_message=4, seed=1))[1], "other")
        again = learner.open_local(spec, group.run_ids, "sebulba-test/0", previous=stream.slots)
        np.testing.assert_array_equal(again.slots, stream.slots)
        assert not set(other.slots.tolist()) & set(stream.slots.tolist())
        other.close()
        again.close()


async def test_an_env_with_another_spec_is_refused(tmp_path, running_learner) -> None:
    async with running_learner(small_config(tmp_path)) as learner:
        spec, run_ids, _ = env_groups(ActorConfig(num_envs=2, envs_per_message=2))
        other = dataclasses.replace(spec, action_space=3)
        with pytest.raises(SpecMismatch, match="the learner serves"):
            learner.open_local(other, run_ids, "wrong")
        assert learner.connected_envs == 0 and learner.actors() == []


async def test_an_in_process_stream_reopened_on_other_slots_reports_its_envs_first_episodes_as_partial(tmp_path, running_learner) -> None:
    """Its envs play on where the learner never saw them begin: one partial episode each, then whole ones."""
    async with running_learner(small_config(tmp_path)) as learner:
        spec, _, (group,) = env_groups(ActorConfig(num_envs=4, envs_per_message=4, seed=0))
        other = learner.open_local(spec, env_groups(ActorConfig(num_envs=4, envs_per_message=4, seed=1))[1], "other")
        stream = learner.open_local(spec, group.run_ids, "sebulba-test/0")
        for _ in range(3):  # too few steps for a CartPole episode to end
            group.step(await stream.act(group.rows(stream.slots)))
        stream.close()
        moved = learner.open_local(spec, group.run_ids, "sebulba-test/0", previous=other.slots)  # held by another
        assert not set(moved.slots.tolist()) & (set(stream.slots.tolist()) | set(other.slots.tolist()))
        ends = np.zeros(4, int)
        while ends.min() < 2:  # every env's partial episode, then a whole one
            group.step(await moved.act(group.rows(moved.slots)))
            ends += group.flags != 0
        await moved.act(group.rows(moved.slots))  # the last ends reach the learner
        await until(lambda: learner.metrics().get("charts/episodes", 0) >= int(ends.sum()) - 4, "the whole episodes")
        assert learner.metrics()["charts/partial_episodes"] == 4.0
        moved.close()
        other.close()
