"""V-trace / IMPALA and its PPO-style sample reuse, as ``aioseed.algos.registry`` composes it."""

from __future__ import annotations

from typing import Any

from aioseed.action_space import Box, Discrete, MultiDiscrete
from aioseed.algos.builder import Algorithm, Split
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.live import LiveSetting, in_section


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


LIVE = in_section("impala", (
    LiveSetting("entropy_cost", "float", 0.0, 1.0),
    LiveSetting("ppo_clip", "float", 0.0, 1.0, low_open=True, high_open=True),
    LiveSetting("epochs", "int", 1, 64),
    LiveSetting("minibatches", "int", 1, 4096, takes_effect="at the next train step (the update is compiled for any minibatch size)"),
    LiveSetting("lr_frames", "int", 0, None, takes_effect="at the next train step: the rate follows the new schedule from the frames trained"),
    LiveSetting("lr_final_fraction", "float", 0.0, 1.0, takes_effect="at the next train step: the rate follows the new schedule"),
    LiveSetting("entropy_frames", "int", 0, None, takes_effect="at the next train step: the cost follows the new schedule"),
    LiveSetting("entropy_final_fraction", "float", 0.0, 1.0, takes_effect="at the next train step: the cost follows the new schedule"),
))
"""What may change while V-trace / PPO trains: the losses read the entropy cost and the clip from variables, the
epochs and minibatches are the train step's loop, the schedules are computed before each step."""


def live_refusal(settings: ImpalaConfig, proposed: ImpalaConfig) -> str | None:
    """A running learner keeps its kind of train step: one pass per batch, or sample reuse (epochs, minibatches or a
    clip), and a clip, once set, stays set."""
    if settings.reuses_samples != proposed.reuses_samples:
        return "this changes one pass per batch into sample reuse or back (epochs, minibatches, ppo_clip): set it at launch"
    if (settings.ppo_clip is None) != (proposed.ppo_clip is None):
        return "ppo_clip turns the clipped surrogate loss on or off: set it at launch"
    return None


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
    live=LIVE,
    live_refusal=live_refusal,
)
