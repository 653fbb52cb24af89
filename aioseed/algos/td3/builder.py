"""TD3 on continuous actions, as ``aioseed.algos.registry`` composes it: SAC's replay and batch split."""

from __future__ import annotations

import dataclasses
from typing import Any

from aioseed.action_space import Box
from aioseed.algos.builder import Algorithm
from aioseed.algos.live import in_section
from aioseed.algos.sac import builder as sac_builder
from aioseed.algos.td3.config import Td3Config


def make_agent(settings: Td3Config, spec: Any, replicas: Any, seed: int | None = None, precision: str = "float32", sides: int = 1) -> Any:
    from aioseed.algos.td3.agent import Td3Agent

    return Td3Agent(spec, settings, replicas, precision=precision)


def evaluation(settings: Td3Config, greedy: bool, epsilon: float) -> Td3Config:
    """The policy's action when greedy, else it with the exploration noise."""
    return dataclasses.replace(settings, evaluation_action="mean" if greedy else "sample")


def policy_name(settings: Td3Config, greedy: bool) -> str:
    """greedy: the policy's action; else with its exploration noise."""
    return "greedy" if greedy else f"exploration noise {settings.exploration_noise:g}"


LIVE = in_section("td3", sac_builder.LIVE)
"""What may change while TD3 trains: SAC's (its losses' constants are compiled in)."""


TD3 = Algorithm(
    name="td3",
    section="td3",
    make_agent=make_agent,
    action_spaces=(Box,),
    replay=sac_builder.replay,
    split=sac_builder.split,
    pacing=frozenset({"replay"}),
    evaluation=evaluation,
    policy_name=policy_name,
    key_hyperparameters=(
        "learning_rate", "critic_learning_rate", "discount", "tau", "policy_frequency", "policy_noise", "noise_clip",
        "exploration_noise", "replay_capacity", "min_replay_size", "replay_ratio", "hidden_sizes",
    ),
    live=LIVE,
)
