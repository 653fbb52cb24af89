"""V-trace / IMPALA and its PPO-style sample reuse, as ``aioseed.algos.registry`` composes it."""

from __future__ import annotations

from typing import Any

from aioseed.action_space import Box, Discrete, MultiDiscrete
from aioseed.algos.builder import Algorithm, Split
from aioseed.algos.impala.config import ImpalaConfig


def make_agent(settings: ImpalaConfig, spec: Any, replicas: Any, seed: int | None = None, precision: str = "float32", sides: int = 1) -> Any:
    from aioseed.algos.impala.agent import ImpalaAgent

    agent = ImpalaAgent(spec, settings, replicas, seed=seed, precision=precision)
    if sides == 1:
        return agent
    from aioseed.algos.impala.sides import SidedAgent

    right_seed = None if seed is None else seed + 1
    return SidedAgent(agent, ImpalaAgent(spec, settings, replicas, seed=right_seed, precision=precision))


def make_policy(settings: ImpalaConfig, spec: Any, device: Any = None, precision: str = "float32") -> Any:
    from aioseed.algos.impala.policy import ImpalaPolicy

    return ImpalaPolicy(spec=spec, config=settings, inference_device=device, precision=precision)


def split(settings: ImpalaConfig, batch_size: int, unroll_length: int) -> Split:
    """``minibatches`` per epoch, of unrolls or of shuffled transitions."""
    if settings.minibatch == "transitions":
        return Split(settings.minibatches, batch_size * unroll_length, f"the {batch_size} x {unroll_length} transitions")
    return Split(settings.minibatches, batch_size, f"training.batch_size = {batch_size}")


IMPALA = Algorithm(
    name="impala",
    section="impala",
    make_agent=make_agent,
    action_spaces=(Discrete, MultiDiscrete, Box),
    split=split,
    pacing=frozenset({"bounded", "synchronous"}),
    make_policy=make_policy,
    separate_sides=True,
    key_hyperparameters=(
        "learning_rate", "optimizer", "lr_schedule", "discount", "entropy_cost", "entropy_schedule", "baseline_cost",
        "lambda_", "targets", "epochs", "minibatches", "ppo_clip", "max_grad_norm", "reward_clipping", "hidden_sizes",
        "lstm_size",
    ),
)
