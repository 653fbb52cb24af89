"""Configuration of the TD3 agent."""

from __future__ import annotations

import dataclasses
from typing import Literal


@dataclasses.dataclass(frozen=True)
class Td3Config:
    """TD3 (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic Methods"): a
    deterministic policy, twin Q networks with clipped double-Q targets, target policy smoothing and delayed
    policy and target updates. Defaults are CleanRL's ``td3_continuous_action``; ``--preset mujoco-td3``
    (aioseed/presets/mujoco-td3.toml) adds the learner's training shape for MuJoCo."""

    # Optimisation
    learning_rate: float = 3e-4
    """Adam rate of the policy; the console sets it, and the critics' rate keeps its ratio to it."""
    critic_learning_rate: float = 3e-4
    """Adam rate of the twin Q networks."""
    adam_epsilon: float = 1e-8
    """Adam epsilon of both optimizers (PyTorch's default, as CleanRL's)."""
    max_grad_norm: float | None = None
    """Clip each network's global gradient norm to this value (None: no clipping, as CleanRL)."""

    # Targets
    discount: float = 0.99
    """gamma."""
    tau: float = 0.005
    """Polyak rate of the target policy and target critics, after every policy update."""
    policy_frequency: int = 2
    """The policy and all targets update after every policy_frequency-th critic update."""
    policy_noise: float = 0.2
    """Target policy smoothing: the std of the Gaussian noise added to the target policy's action, in units of
    the action box's half-width."""
    noise_clip: float = 0.5
    """That noise is clipped to [-noise_clip, noise_clip] (same units)."""

    # Updates
    minibatches: int = 1
    """Updates per train step: --training.batch-size is split into this many minibatches of equal size, sampled
    together, all in one compiled call; the replay ratio and the delayed rhythm are kept exactly."""
    jit_compile: bool = False
    """Compile the train step's updates with XLA."""

    # Replay (uniform, on the learner; unrolls of --training.unroll-length steps)
    replay_capacity: int = 1_000_000
    """Unrolls kept; the oldest is evicted first. With unroll_length 1 an unroll is one transition."""
    min_replay_size: int = 25_000
    """Unrolls in replay before training starts (CleanRL's learning_starts, in transitions at unroll_length 1)."""
    replay_ratio: float = 256.0
    """Average times each unroll inserted after the first min_replay_size is sampled (SAC's): one update of
    --training.batch-size 256 unrolls per env step is 256."""
    acting_ahead: int = 64
    """With --training.acting replay: unrolls acting may complete beyond what the replay ratio allows."""
    checkpoint_replay: bool = False
    """Save the replay with every checkpoint (checkpoints/replay) and restore it on a restart."""

    # Acting
    exploration_noise: float = 0.1
    """The std of the Gaussian noise added to the policy's action while acting (units of the box's half-width)."""
    warmup_actions: Literal["policy", "uniform"] = "uniform"
    """Until the first update: act uniformly at random in the box (CleanRL's, for its learning_starts steps), or
    run the initial policy with its exploration noise."""
    evaluation_action: Literal["mean", "sample"] = "mean"
    """What evaluation envs (actors started with --evaluation) run: the policy's action, or it with the
    exploration noise."""

    # Networks
    hidden_sizes: tuple[int, ...] = (256, 256)
    """Hidden layers of the policy and of each Q network."""
    activation: Literal["relu", "tanh"] = "relu"
    """Their activation."""

    def __post_init__(self) -> None:
        for name in ("learning_rate", "critic_learning_rate", "replay_ratio"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("policy_noise", "noise_clip", "exploration_noise"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {self.discount}")
        if not 0 < self.min_replay_size <= self.replay_capacity:
            raise ValueError(f"min_replay_size must be in [1, replay_capacity={self.replay_capacity}], got {self.min_replay_size}")
        if self.policy_frequency < 1:
            raise ValueError(f"policy_frequency must be >= 1, got {self.policy_frequency}")
        if self.minibatches < 1:
            raise ValueError(f"minibatches must be >= 1, got {self.minibatches}")
        if self.acting_ahead < 0:
            raise ValueError(f"acting_ahead must be >= 0, got {self.acting_ahead}")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be positive or None, got {self.max_grad_norm}")
