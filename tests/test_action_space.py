"""Action spaces: what actors declare, how actions travel, and what the learner refuses to send."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from aioseed import action_space as spaces
from aioseed.action_space import Box, Discrete, MultiDiscrete
from aioseed.proto import aioseed_pb2 as pb
from aioseed.spec import EnvSpec

PENDULUM = Box((1,), (-2.0,), (2.0,))


@pytest.mark.parametrize(
    ("space", "expected"),
    [
        (gym.spaces.Discrete(3), Discrete(3)),
        (gym.spaces.MultiDiscrete([3, 2, 5]), MultiDiscrete((3, 2, 5))),
        (gym.spaces.Box(-2.0, 2.0, (1,), np.float32), PENDULUM),
        (gym.spaces.Box(np.array([-1.0, 0.0]), np.array([1.0, 0.1]), dtype=np.float64), Box((2,), (-1.0, 0.0), (1.0, float(np.float32(0.1))))),
    ],
)
def test_gymnasium_spaces_map_to_the_wire_spaces_and_survive_the_proto(space, expected) -> None:
    ours = spaces.from_gym(space)
    assert ours == expected
    spec = EnvSpec((3,), "float32", ours)
    assert EnvSpec.from_proto(spec.to_proto()) == spec


@pytest.mark.parametrize(
    ("space", "named"),
    [
        (gym.spaces.Box(-np.inf, np.inf, (2,), np.float32), "infinite bounds"),
        # "Unbounded" as float32's largest bounds: the width overflows, and every action came out inf or NaN.
        (gym.spaces.Box(-np.finfo(np.float32).max, np.finfo(np.float32).max, (2,), np.float32), "past float32's range"),
        (gym.spaces.Discrete(3, start=1), "starts at 1"),
        (gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Discrete(3)]), "Tuple(Discrete(2), Discrete(3))"),
        (gym.spaces.MultiBinary(4), "MultiBinary(4)"),
        (gym.spaces.MultiDiscrete([[2, 3], [4, 5]]), "one-dimensional"),
        (gym.spaces.Box(0, 5, (2,), np.int64), "float Box"),
    ],
)
def test_a_space_aioseed_cannot_serve_is_named_in_its_error(space, named) -> None:
    with pytest.raises(TypeError, match=named.replace("(", r"\(").replace(")", r"\)")):
        spaces.from_gym(space)


def test_an_old_discrete_actors_spec_still_reads_as_discrete() -> None:
    message = pb.EnvSpec(observation_shape=[4], observation_dtype="float32", num_actions=2)
    assert EnvSpec.from_proto(message).action_space == Discrete(2)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"num_actions": 2, "action_nvec": [2]},
        {"num_actions": 2, "action_box": pb.BoxSpace(shape=[1], low=[0], high=[1])},
        {"action_box": pb.BoxSpace(shape=[2], low=[0], high=[1])},
        {"action_box": pb.BoxSpace(shape=[1], low=[1], high=[0])},
        {"action_box": pb.BoxSpace(shape=[1], low=[float("-inf")], high=[0])},
        {"action_nvec": [3, 0]},
        {"num_actions": -1},
    ],
)
def test_a_malformed_action_space_is_a_value_error(fields) -> None:
    with pytest.raises(ValueError):
        EnvSpec.from_proto(pb.EnvSpec(observation_shape=[4], observation_dtype="float32", **fields))


def test_box_actions_are_clipped_into_the_box_and_the_clipped_rows_counted() -> None:
    space = Box((2,), (-1.0, 0.0), (1.0, 0.5))
    actions = np.array([[0.5, 0.25], [1.0000001, 0.25], [-3.0, 9.0], [1.0, 0.0]], np.float32)
    sent, clipped = spaces.clip(space, actions)
    assert clipped == 2
    np.testing.assert_array_equal(sent, [[0.5, 0.25], [1.0, 0.25], [-1.0, 0.5], [1.0, 0.0]])
    decoded = spaces.decode(space, spaces.encode(space, sent), 4)
    np.testing.assert_array_equal(decoded, sent)


def test_actions_that_cannot_be_sent_are_invalid_rows() -> None:
    assert spaces.invalid_actions(Discrete(3), np.array([0, 2, 3, -1])).tolist() == [False, False, True, True]
    assert spaces.invalid_actions(MultiDiscrete((2, 3)), np.array([[1, 2], [2, 0], [0, 3]])).tolist() == [False, True, True]
    assert spaces.invalid_actions(PENDULUM, np.array([[5.0], [np.nan], [-np.inf]], np.float32)).tolist() == [False, True, True]


@pytest.mark.parametrize(
    ("space", "data", "error"),
    [
        (Discrete(2), np.array([0, 1, 2], "<i4").tobytes(), "outside"),
        (Discrete(2), np.array([0, 1], "<i4").tobytes(), "got 8 bytes"),
        (PENDULUM, np.array([0.5, 2.5, 0.0], "<f4").tobytes(), "outside"),
        (PENDULUM, np.array([0.5, np.nan, 0.0], "<f4").tobytes(), "outside"),
        (MultiDiscrete((2, 2)), np.zeros(3, "<i4").tobytes(), "got 12 bytes"),
    ],
)
def test_an_actor_refuses_actions_its_envs_cannot_run(space, data, error) -> None:
    with pytest.raises(ValueError, match=error):
        spaces.decode(space, data, 3)


def test_the_spec_describes_each_space_and_num_actions_names_a_non_discrete_one() -> None:
    assert EnvSpec((3,), "float32", PENDULUM).describe() == "obs float32[3], Box[1] actions in [-2, 2]"
    assert EnvSpec((3,), "float32", MultiDiscrete((3, 2))).describe() == "obs float32[3], MultiDiscrete[3,2] actions"
    assert Box((2,), (-1.0, 0.0), (1.0, 0.5)).describe() == "Box[2] actions in [-1, 1] x [0, 0.5]"
    assert Box((5,), (0.0,) * 4 + (1.0,), (2.0,) * 5).describe().endswith("x [0, 2] x ...")
    with pytest.raises(TypeError, match=r"needs a Discrete action space; the env has Box\[1\]"):
        _ = EnvSpec((3,), "float32", PENDULUM).num_actions
