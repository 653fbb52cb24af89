"""Over loopback: an actor that reconnects to a learner restarted since carries on its envs' episodes. The learner
did not see them begin, so their returns would be a part of the game's: it counts them as partial and reports
neither their returns nor a stop on them; a first connection's envs, and every env's next episode, count whole."""

from __future__ import annotations

import grpc
from tests.conftest import small_config
from tests.waiting import until
from tests.wire import Stream, hello, steps

from aioseed.types import FINAL, TERMINATED

FIRST, RECONNECTED = 1000, 2000  # the two streams' run_id bases


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
