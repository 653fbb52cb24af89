"""What a run is, for the console's run panel: env, agent, network, devices, version, logdir, start time,
the key hyperparameters and the checkpoints kept."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from aioseed.server.config import LearnerConfig

KEY_HYPERPARAMETERS = {
    "impala": (
        "learning_rate", "optimizer", "lr_schedule", "discount", "entropy_cost", "entropy_schedule", "baseline_cost",
        "lambda_", "targets", "epochs", "minibatches", "ppo_clip", "max_grad_norm", "reward_clipping", "hidden_sizes",
        "lstm_size",
    ),
    "r2d2": (
        "learning_rate", "discount", "n_steps", "burn_in", "target_update_period", "replay_capacity",
        "min_replay_size", "replay_ratio", "priority_exponent", "importance_exponent", "lstm_size",
    ),
    "sac": (
        "learning_rate", "critic_learning_rate", "alpha_learning_rate", "discount", "tau", "initial_alpha",
        "autotune_alpha", "target_entropy", "replay_capacity", "min_replay_size", "replay_ratio", "hidden_sizes",
    ),
}
"""The agent's fields the panel shows (the rest are in logdir/config.toml)."""


def describe(config: LearnerConfig, devices: tuple[str, ...], inference_devices: tuple[str, ...], started: float) -> dict[str, Any]:
    """The run panel's fixed part (the checkpoints are added as they are written)."""
    from aioseed import __version__

    agent = getattr(config, config.agent)
    hyper = {name: getattr(agent, name) for name in KEY_HYPERPARAMETERS[config.agent]}
    hyper |= {f"training.{field.name}": getattr(config.training, field.name) for field in dataclasses.fields(config.training)}
    return {
        "env": config.env,
        "agent": config.agent,
        "architecture": config.architecture,
        "network": getattr(agent, "network", "mlp"),  # SAC's actor and critics are MLPs
        "devices": list(devices),
        "inference_devices": list(inference_devices),
        "version": __version__,
        "logdir": None if config.logdir is None else str(config.logdir),
        "started": datetime.datetime.fromtimestamp(started, datetime.UTC).isoformat(timespec="seconds"),
        "seed": config.seed,
        "hyperparameters": {k: list(v) if isinstance(v, tuple) else v for k, v in hyper.items()},
    }
