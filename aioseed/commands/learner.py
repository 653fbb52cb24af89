"""``aioseed learner``: the learner daemon, serving remote actors until SIGINT/SIGTERM."""

from __future__ import annotations

import gc

from aioseed.commands.run import build_learner
from aioseed.commands.signals import stop_on_signals
from aioseed.commands.terminal import showing
from aioseed.compose.config import LearnerConfig


def main(config: LearnerConfig) -> int:
    """``aioseed learner``'s exit status (``serve``)."""
    import uvloop

    return uvloop.run(serve(config))


async def serve(config: LearnerConfig) -> int:
    """``aioseed learner``: serve until SIGINT/SIGTERM, then stop in order and exit 0 (1: the final checkpoint
    was not written)."""
    learner = build_learner(config)
    # What exists once the learner is built (TensorFlow, the model) lives as long as this process: freezing
    # it leaves it out of the cyclic collector's scans, which the transport runs while calls are refused
    # (``Refusals.collect_cycles``). Only here, in the daemon's own process: a frozen object is never
    # collected, nor any garbage cycle through it, so a process that builds learners repeatedly must not.
    gc.freeze()
    stop_on_signals(learner.request_stop)
    async with showing(learner, config.stop, config.env, config.display):
        await learner.run()
    return 1 if learner.final_checkpoint_error else 0
