"""Configuration of the V-trace (IMPALA) agent."""

from __future__ import annotations

import dataclasses
from typing import Literal

NetworkKind = Literal["auto", "mlp", "nature_cnn", "impala_resnet", "football_resnet"]
"""Torsos ``build_policy_value`` knows (both agents take the same names)."""


@dataclasses.dataclass(frozen=True)
class ImpalaConfig:
    """V-trace actor-critic (Espeholt et al. 2018). Defaults suit CartPole-v1."""

    # Optimisation
    learning_rate: float = 1e-3
    """Adam learning rate (can be changed while training)."""
    adam_epsilon: float = 1e-7
    """Adam epsilon."""
    max_grad_norm: float | None = 1.0
    """Clip the global gradient norm to this value (None: no clipping). On CartPole, 1.0 prevented the
    occasional collapse to a deterministic policy seen with 40 (1 run in 13) and learned faster."""

    # Loss
    discount: float = 0.99
    """gamma."""
    baseline_cost: float = 0.5
    """Weight of the value loss."""
    entropy_cost: float = 0.01
    """Weight of the entropy bonus."""
    clip_rho_threshold: float = 1.0
    """rho-bar: importance weight clip in the V-trace targets."""
    clip_pg_rho_threshold: float = 1.0
    """Importance weight clip in the policy-gradient advantages."""
    lambda_: float = 1.0
    """Trace mixing lambda of V-trace."""
    reward_clipping: Literal["none", "abs_one", "soft_asymmetric"] = "none"
    """none; abs_one clips to [-1, 1] (Atari); soft_asymmetric is SEED's 5*tanh(r/5) with negatives scaled by 0.3."""

    # Network
    network: NetworkKind = "auto"
    """auto: the Nature CNN for stacked uint8 frames [stack, H, W], SEED's Football ResNet
    (football_resnet) for channels-last maps [H, W, C], the MLP otherwise. impala_resnet is the IMPALA
    deep torso (about 8x slower than the Nature CNN on this CPU)."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the MLP torso."""
    shared_torso: bool = False
    """One MLP torso for both heads; by default the value has its own."""
    activation: Literal["tanh", "relu"] = "tanh"
    """Activation of the MLP torso."""
    jit_compile: bool = False
    """Compile inference and the train step with XLA. Off: on this 2-core CPU it made the convnets slower
    (see README, Benchmarks); try it on GPUs."""
    lstm_size: int = 0
    """Units of an LSTM core between the torso and the heads (0: feedforward). The learner keeps each
    env's state and stores it with every unroll; training replays the core from it. SEED uses 256."""

    def __post_init__(self) -> None:
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {self.discount}")
        if not 0.0 <= self.lambda_ <= 1.0:
            raise ValueError(f"lambda_ must be in [0, 1], got {self.lambda_}")
        if self.lstm_size < 0:
            raise ValueError(f"lstm_size must be >= 0, got {self.lstm_size}")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be positive or None, got {self.max_grad_norm}")
