"""Evaluation protocols fix the Atari settings, the episodes and the policy they are named for."""

from __future__ import annotations

import dataclasses

import pytest

from aioseed.commands.evaluate import EvalConfig
from aioseed.envs.atari import AtariConfig
from aioseed.results.protocols import PROTOCOLS, describe


def test_seed_and_machado_fix_the_settings_their_papers_name() -> None:
    seed = dataclasses.replace(AtariConfig(episodic_life=True), **PROTOCOLS["seed"].atari_overrides())
    assert (seed.sticky_action_probability, seed.noop_max, seed.max_episode_frames, seed.episodic_life) == (0.0, 30, 108_000, False)
    machado = dataclasses.replace(AtariConfig(noop_max=30), **PROTOCOLS["machado"].atari_overrides())
    assert (machado.sticky_action_probability, machado.noop_max, machado.episodic_life) == (0.25, 0, False)
    assert PROTOCOLS["seed"].r2d2_epsilon == PROTOCOLS["machado"].r2d2_epsilon == 0.001
    assert PROTOCOLS["none"].atari_overrides() == {} and not PROTOCOLS["none"].atari_only


def test_the_record_names_the_protocol_as_it_ran() -> None:
    record = describe(PROTOCOLS["seed"], 5, "epsilon 0.001")
    assert (record["name"], record["episodes"], record["policy"], record["noop_max"]) == ("seed", 5, "epsilon 0.001", 30)
    assert "108K" in record["description"]


def test_every_protocol_is_a_choice_of_the_eval_command() -> None:
    from aioseed.cli import parse

    for name in PROTOCOLS:
        assert parse(["eval", "--protocol", name]) == EvalConfig(protocol=name)
    with pytest.raises(SystemExit):
        parse(["eval", "--protocol", "nature"])
