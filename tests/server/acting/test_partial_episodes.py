"""Over loopback: an actor that reconnects to a learner restarted since carries on its envs' episodes. The learner
did not see them begin, so their returns would be a part of the game's: it counts them as partial and reports
neither their returns nor a stop on them; a first connection's envs, and every env's next episode, count whole.
The same holds for IMPALA mode's uploads."""

from __future__ import annotations

import grpc
from tests.conftest import small_config
from tests.server.transport.test_impala_mode import TOKEN, impala_config, zero_unrolls
from tests.waiting import until
from tests.wire import Stream, hello, steps

from aioseed.impala_actor.actor import upload_message

from aioseed.types import FINAL, TERMINATED

FIRST, RECONNECTED, EVALUATING = 1000, 2000, 3000  # the streams' run_id bases


async def episode(stream: Stream, base: int, rewards: list[float]) -> None:
    """One env's rows: each reward arrives with the next row, and the last ends the episode."""
    for i, reward in enumerate(rewards):
        flags = [TERMINATED | FINAL] if i == len(rewards) - 1 else [0]
        await stream.step(steps(stream.slots, run_id_base=base, rewards=[reward], flags=flags))


async def test_an_episode_begun_before_a_learner_restart_is_partial_and_reaches_no_chart_or_stop(running_learner, tmp_path) -> None:
    config = small_config(tmp_path, return_window=2, stop={"at_return": 50.0})
    async with running_learner(config) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        first = Stream(channel)
        await first.handshake(hello(1, run_id_base=FIRST))
        await episode(first, FIRST, [0.0, 1.0, 1.0, 1.0])  # a reset row, then 3 steps: return 3, whole

        again = Stream(channel)  # an actor whose env played on a slot of the learner before its restart
        await again.handshake(hello(1, run_id_base=RECONNECTED, previous=[7]))
        await episode(again, RECONNECTED, [100.0] * 4)  # its resent row, then the game's last 3 steps: partial
        await until(lambda: learner.metrics().get("charts/partial_episodes") == 1.0, "the partial episode")
        assert learner.metrics()["charts/episodes"] == 1.0 and learner.metrics()["charts/return"] == 3.0
        assert learner.stopping.reason is None  # 300 of a part of a game does not reach at_return 50

        await episode(again, RECONNECTED, [0.0, 5.0, 5.0])  # its env's next episode, from the reset row: whole
        await until(lambda: learner.metrics().get("charts/episodes") == 2.0, "the reconnected env's whole episode")
        assert learner.metrics()["charts/return"] == (3.0 + 10.0) / 2
        assert learner.metrics()["charts/partial_episodes"] == 1.0

        # An evaluation env's episodes count in neither charts/episodes nor charts/partial_episodes.
        evaluating = Stream(channel)
        reconnect = hello(1, run_id_base=EVALUATING, previous=[9])
        reconnect.hello.evaluation = True
        await evaluating.handshake(reconnect)
        await episode(evaluating, EVALUATING, [100.0] * 4)  # partial
        await episode(evaluating, EVALUATING, [0.0, 7.0])  # whole: once it is reported, the partial one was seen
        await until(lambda: learner.metrics().get("charts/eval_return") == 7.0, "the evaluation env's whole episode")
        assert learner.metrics()["charts/partial_episodes"] == 1.0 and learner.metrics()["charts/episodes"] == 2.0


async def test_an_impala_actors_first_upload_counts_from_its_reset_row_and_a_reconnected_one_is_partial(running_learner, tmp_path) -> None:
    """An IMPALA actor's first unroll starts on its envs' reset rows, which are not done (it dropped every env's first
    episode): a first connection's first episode is whole; a reconnected stream's first episode the learner never saw
    begin is partial."""
    async with running_learner(impala_config(tmp_path, return_window=2)) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        for stream_hello, reward in ((hello(1, run_id_base=FIRST), 1.0), (hello(1, run_id_base=RECONNECTED, previous=[7]), 100.0)):
            stream = Stream(channel, TOKEN, "Learn")
            slots = await stream.handshake(stream_hello)
            unrolls = zero_unrolls(learner, 1)
            unrolls["reward"][0, 1:4] = reward
            unrolls["done"][0, 3] = True  # an episode of 3 steps ends (SEED's convention: no final row)
            await stream.send(upload_message(unrolls, slots, [], []))
        await until(lambda: learner.metrics().get("charts/partial_episodes") == 1.0, "the reconnected stream's partial episode")
        assert learner.metrics()["charts/episodes"] == 1.0 and learner.metrics()["charts/return"] == 3.0
