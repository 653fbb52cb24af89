"""Several controlled players per game over real gRPC: a learner serving a 1 + 1 player Football scenario checks
that streams carry whole games, counts a game's step once in its frames and reports each side's returns apart."""

from __future__ import annotations

import math

import grpc
import numpy as np
import pytest
from tests.conftest import small_config
from tests.waiting import until
from tests.wire import Stream, hello, refused, steps

from aioseed.envs.football import FootballConfig
from aioseed.spec import EnvSpec
from aioseed.types import FINAL, TERMINATED

SCENARIO = "football:academy_empty_goal_close"
ONE_ON_ONE = EnvSpec((115,), "float32", 19, players=(1, 1))


def observations(k: int) -> np.ndarray:
    return np.random.default_rng(k).uniform(-1, 1, size=(k, 115)).astype(np.float32)


@pytest.fixture
def football(tmp_path):
    players = FootballConfig(representation="simple115v2", left_players=1, right_players=1)
    return small_config(tmp_path, env=SCENARIO, football=players, metrics_every_s=0.1, training={"batch_size": 2, "unroll_length": 4})


async def test_a_hello_whose_player_count_differs_gets_failed_precondition_naming_both(running_learner, football) -> None:
    async with running_learner(football) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            error = await refused(channel, hello(2, spec=EnvSpec((115,), "float32", 19), run_id_base=10))
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert "1 left + 1 right players/env" in error.details() and "obs float32[115], 19 actions," in error.details()
            error = await refused(channel, hello(3, spec=ONE_ON_ONE, run_id_base=20))
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "multiple of the 2 controlled players of each game" in error.details()


@pytest.mark.parametrize("case", ["players of a game end apart", "slots out of the Welcome's order"])
async def test_rows_that_split_a_game_get_invalid_argument_while_other_streams_act(running_learner, football, case) -> None:
    async with running_learner(football) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            healthy, bad = Stream(channel), Stream(channel)
            await healthy.handshake(hello(4, spec=ONE_ON_ONE, run_id_base=7000))
            await bad.handshake(hello(4, spec=ONE_ON_ONE, run_id_base=100))
            if case == "players of a game end apart":
                message = steps(bad.slots, 100, observations=observations(4), flags=[0, 0, TERMINATED | FINAL, 0])
                expected = "steps.flags must be the same for a game's 2 players; game(s) [1] differ"
            else:
                message = steps(bad.slots[::-1], 100, observations=observations(4))
                expected = "in its Welcome's order"
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await bad.send(message)
            assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT and expected in error.value.details()
            for _ in range(3):
                actions = await healthy.step(steps(healthy.slots, 7000, rewards=np.zeros(4), observations=observations(4)))
                assert len(actions) == 4 and ((actions >= 0) & (actions < 19)).all()


async def test_frames_count_a_games_step_once_and_each_side_has_its_own_returns(running_learner, football) -> None:
    async with running_learner(football) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            stream = Stream(channel)
            await stream.handshake(hello(4, spec=ONE_ON_ONE, run_id_base=500))
            zero = np.zeros(4)
            for _ in range(5):  # 5 steps of 2 games: 20 rows, 10 frames
                await stream.step(steps(stream.slots, 500, rewards=zero, observations=observations(4)))
            # Game 0: its left player scores (+1, the right -1); game 1 plays on.
            ended = np.array([TERMINATED | FINAL] * 2 + [0, 0])
            await stream.step(steps(stream.slots, 500, rewards=[1, -1, 0, 0], observations=observations(4), flags=ended))
            # 22 rows that are env steps (game 0's final rows are not: their actions are never run) over 2 players
            assert learner.frames == 11
            assert learner.mean_return == 1.0  # the left side's episodes only

            def right_side_reported() -> bool:
                return learner.metrics().get("charts/return_right", math.nan) == -1.0

            await until(right_side_reported, "the right side's return in a snapshot (one every 0.1 s)", 300)
