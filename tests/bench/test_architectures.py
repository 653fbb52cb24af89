"""`bench architectures`' wire cost: a real Steps message and its Actions reply, per env row."""

from __future__ import annotations

import dataclasses

from aioseed.bench.architectures import impala_run, wire_bytes_per_step
from aioseed.bench.config import atari_run, cartpole_run


def test_wire_bytes_per_step_are_the_rows_payload_plus_framing() -> None:
    cartpole = wire_bytes_per_step(cartpole_run())
    # 4 float32 observation + slot, run_id, reward, flags (17) + a 4-byte action, and a little framing per row.
    assert 16 + 17 + 4 <= cartpole < 16 + 17 + 4 + 4
    pong = wire_bytes_per_step(atari_run())  # the learner stacks frames: one 84x84 frame per row
    assert 84 * 84 + 17 + 4 <= pong < 84 * 84 + 17 + 4 + 4
    stacked = wire_bytes_per_step(dataclasses.replace(atari_run(), learner=dataclasses.replace(atari_run().learner, learner_frame_stack=1)))
    assert 4 * 84 * 84 + 17 + 4 <= stacked < 4 * 84 * 84 + 17 + 4 + 4  # actor-side stacking sends 4x the bytes


def test_the_impala_row_runs_the_same_workload_with_the_policy_on_the_actors() -> None:
    seed = atari_run()
    run = impala_run(seed, envs_per_message=1)
    assert run.served_learner.architecture == "impala" and run.learner.learner_frame_stack == 1
    actor = run.actor_config(8686, 0)
    assert (actor.architecture, actor.envs_per_message, actor.atari.stack) == ("impala", 1, 4)  # stacks on the actor
    assert (run.num_actors, run.envs_per_actor, run.learner.impala) == (seed.num_actors, seed.envs_per_actor, seed.learner.impala)
