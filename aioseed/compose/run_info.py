"""What a run is, for the console's run panel: env, agent, network, devices, version, logdir, seed and the
algorithm's key hyperparameters (the learner adds its start time and the checkpoints kept)."""

from __future__ import annotations

import dataclasses
from typing import Any

from aioseed.algos.registry import algorithm
from aioseed.compose.config import LearnerConfig


def describe(config: LearnerConfig, devices: tuple[str, ...], inference_devices: tuple[str, ...]) -> dict[str, Any]:
    """The run panel's fixed part."""
    from aioseed import __version__

    trains = algorithm(config.agent)
    settings = trains.settings(config)
    hyper = {name: getattr(settings, name) for name in trains.key_hyperparameters}
    hyper |= {f"training.{field.name}": getattr(config.training, field.name) for field in dataclasses.fields(config.training)}
    return {
        "env": config.env,
        "agent": config.agent,
        "architecture": config.architecture,
        "network": getattr(settings, "network", "mlp"),  # SAC's actor and critics are MLPs
        "devices": list(devices),
        "inference_devices": list(inference_devices),
        "version": __version__,
        "logdir": None if config.logdir is None else str(config.logdir),
        "seed": config.seed,
        "hyperparameters": {k: list(v) if isinstance(v, tuple) else v for k, v in hyper.items()},
    }
