"""Configuration of the SAC agent."""

from __future__ import annotations

import dataclasses
from typing import Literal


@dataclasses.dataclass(frozen=True)
class SacConfig:
    """Soft Actor-Critic with twin Q networks, Polyak-averaged targets and an automatic entropy temperature
    (Haarnoja et al. 2018, "SAC: Algorithms and Applications"). Defaults are CleanRL's ``sac_continuous_action``
    but for ``warmup_actions``, ``log_std`` and ``log_prob_epsilon``, each of which names CleanRL's choice (with
    all three, one Hopper seed scored lower: docs/results/README.md); ``--preset mujoco-sac``
    (aioseed/presets/mujoco-sac.toml) adds the learner's training shape for MuJoCo."""

    # Optimisation
    learning_rate: float = 3e-4
    """Adam rate of the policy; the console sets it, and the critics' and temperature's rates keep their ratio to it."""
    critic_learning_rate: float = 1e-3
    """Adam rate of the twin Q networks."""
    alpha_learning_rate: float = 1e-3
    """Adam rate of log(alpha)."""
    adam_epsilon: float = 1e-8
    """Adam epsilon of all three optimizers (PyTorch's default, as CleanRL's)."""
    max_grad_norm: float | None = None
    """Clip each network's global gradient norm to this value (None: no clipping, as CleanRL)."""

    # Targets
    discount: float = 0.99
    """gamma."""
    tau: float = 0.005
    """Polyak rate: target <- tau online + (1 - tau) target after every update."""
    policy_frequency: int = 2
    """Delayed policy updates (TD3's, CleanRL's default 2): every policy_frequency-th critic update is followed by
    policy_frequency updates of the policy and of the temperature on the same batch, so both average one update
    per critic update. 1: the policy and the temperature update after every critic update."""
    initial_alpha: float = 1.0
    """The entropy temperature alpha to start from."""
    autotune_alpha: bool = True
    """Learn alpha towards ``target_entropy``; off: alpha stays at initial_alpha."""
    target_entropy: float | None = None
    """Entropy alpha's loss aims for, in nats (None: minus the number of action dimensions)."""

    # Updates
    update: Literal["fused", "separate"] = "fused"
    """fused: a train step's updates (its ``minibatches``, each with the critics, and on the delayed rhythm the
    policy and the temperature) run in one compiled call; separate: one call for the critics and one per policy
    update (the path before issue 60, kept to measure against)."""
    minibatches: int = 1
    """Updates per train step: --training.batch-size is split into this many minibatches of equal size, sampled
    together; the replay ratio and the delayed-policy rhythm are kept exactly (fused only)."""
    jit_compile: bool = False
    """Compile the fused update with XLA."""

    # Replay (uniform, on the learner; unrolls of --training.unroll-length steps)
    replay_capacity: int = 1_000_000
    """Unrolls kept; the oldest is evicted first. With unroll_length 1 an unroll is one transition."""
    min_replay_size: int = 5_000
    """Unrolls in replay before training starts (CleanRL's learning_starts, in transitions at unroll_length 1)."""
    replay_ratio: float = 256.0
    """Average times each unroll inserted after the first min_replay_size is sampled: the lever that trades
    learning per frame against compute. One update of --training.batch-size 256 unrolls per env step after
    learning starts (CleanRL's) is 256; 128 is one update every two steps. With --training.acting replay, acting
    waits for training so that the ratio holds from both sides."""
    acting_ahead: int = 64
    """With --training.acting replay: unrolls acting may complete beyond what the replay ratio allows, so that
    acting and training overlap instead of taking turns (the ratio then holds within this many unrolls)."""
    checkpoint_replay: bool = False
    """Save the replay with every checkpoint (checkpoints/replay) and restore it on a restart."""

    # Acting
    warmup_actions: Literal["policy", "uniform"] = "policy"
    """Until the first update: sample the initial policy (tanh of a unit Gaussian), or act uniformly at random in
    the box, as CleanRL does for its learning_starts steps."""
    evaluation_action: Literal["mean", "sample"] = "mean"
    """What evaluation envs (actors started with --evaluation) run: the squashed mean action, or a sample."""

    # Networks
    hidden_sizes: tuple[int, ...] = (256, 256)
    """Hidden layers of the policy and of each Q network."""
    activation: Literal["relu", "tanh"] = "relu"
    """Their activation."""
    critic_layer_norm: bool = False
    """Layer normalisation after each hidden layer of the Q networks, before the activation (RLPD's and BRO's
    critics): it bounds the features' scale, against the Q-value blow-ups that precede collapses. One Hopper
    seed learned more slowly with it (docs/results/README.md)."""
    log_std: Literal["clip", "tanh"] = "clip"
    """The policy's log-std: clipped to [-5, 2], or squashed into it by a rescaled tanh (CleanRL's)."""
    log_prob_epsilon: float = 0.0
    """0: the exact tanh correction of the log-probability; CleanRL's 1e-6 caps a saturated action's cost
    (``aioseed.algos.tanh_gaussian.log_det_jacobian``)."""

    def __post_init__(self) -> None:
        for name in ("learning_rate", "critic_learning_rate", "alpha_learning_rate", "initial_alpha", "replay_ratio"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {self.discount}")
        if not 0 < self.min_replay_size <= self.replay_capacity:
            raise ValueError(f"min_replay_size must be in [1, replay_capacity={self.replay_capacity}], got {self.min_replay_size}")
        if self.log_prob_epsilon < 0:
            raise ValueError(f"log_prob_epsilon must be >= 0, got {self.log_prob_epsilon}")
        if self.policy_frequency < 1:
            raise ValueError(f"policy_frequency must be >= 1, got {self.policy_frequency}")
        if self.minibatches < 1 or (self.minibatches > 1 and self.update != "fused"):
            raise ValueError(f"minibatches must be >= 1, and above 1 only with update fused; got {self.minibatches} ({self.update})")
        if self.jit_compile and self.update != "fused":
            raise ValueError("jit_compile compiles the fused update: use update fused")
        if self.acting_ahead < 0:
            raise ValueError(f"acting_ahead must be >= 0, got {self.acting_ahead}")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be positive or None, got {self.max_grad_norm}")
