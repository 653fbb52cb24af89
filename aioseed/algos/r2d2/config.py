"""Configuration of the R2D2 agent, with documented presets."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal

import numpy as np

from aioseed.algos.impala.config import NetworkKind


@dataclasses.dataclass(frozen=True)
class R2D2Config:
    """Recurrent replay distributed DQN (Kapturowski et al. 2019).

    The defaults are SEED RL's Atari settings (``gcp/train_atari.sh``): burn-in 40 + unroll 80
    (``--training.unroll-length 80``), n = 5, gamma 0.997, Adam 1e-4 with epsilon 1e-3, clip norm 80, LSTM 512,
    alpha 0.9, beta 0.6, target update every 2500 steps; and SEED's Atari network and learner
    (``seed_rl/atari/networks.py``, ``seed_rl/agents/r2d2/learner.py``): the previous action and reward join
    the LSTM's input, a hidden layer of 512 in each dueling stream, a sequence's loss summed over its steps,
    new unrolls prioritised from the Q values inference computed. Where aioseed differs on purpose: the
    previous action and reward are zero at every episode start (SEED's carry over a ``done``), a truncation
    bootstraps from the episode's final observation (SEED treats it as a termination), and replay samples are
    stratified. The replay's size and pace are one machine's (SEED's script: 100K unrolls, 5K before training,
    batches of 64, replay ratio 0.75; ``--training.batch-size`` and the fields below).
    ``--preset r2d2-cartpole`` (aioseed/presets/r2d2-cartpole.toml) learns CartPole-v1 here in about
    17 s; ``--preset atari-r2d2`` sizes R2D2 for Pong on 2 CPU cores.
    """

    VALUES_BEFORE: ClassVar[dict[str, Any]] = {
        "loss_reduction": "mean", "previous_action_reward": False, "dueling_hidden": 0, "initial_priority": "max",
    }
    """Fields added on 2026-11-30, with SEED's values as defaults, and the values that give R2D2 as it ran before
    them: a run's saved config.toml that predates them means these (``aioseed.compose.config_file.as_flags``)."""

    # Optimisation
    learning_rate: float = 1e-4
    """Adam learning rate (can be changed while training)."""
    adam_epsilon: float = 1e-3
    """Adam epsilon."""
    max_grad_norm: float | None = 80.0
    """Clip the global gradient norm to this value (None: no clipping)."""

    # Targets
    discount: float = 0.997
    """gamma."""
    n_steps: int = 5
    """n of the n-step double-Q targets."""
    value_rescale_eps: float = 1e-3
    """eps of the value rescaling h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x."""
    target_update_period: int = 2500
    """Copy the online network into the target network every this many train steps."""
    reward_clipping: Literal["none", "abs"] = "none"
    """abs clips rewards to [-1, 1] (R2D2 relies on value rescaling instead)."""

    loss_reduction: Literal["sum", "mean"] = "sum"
    """How a sequence's squared TD errors make its loss: summed over its learned steps (SEED), or their mean
    (gradients 1/T as large, so Adam's epsilon and the clip norm weigh T times more)."""

    # Sequences
    burn_in: int = 40
    """Steps at the start of each unroll that only warm up the LSTM state (no gradient). Consecutive
    unrolls overlap by burn_in + 1 steps, so every step is learned from once."""

    # Prioritized replay
    checkpoint_replay: bool = False
    """Save the replay (unrolls, priorities, counters) with every checkpoint, under checkpoints/replay, and
    restore it on a restart, so training resumes without refilling it. Costs the replay's size on disk and
    a pause of inserts while it is written (CartPole preset: ~2 MB; an Atari unroll of 121 steps with
    learner-side stacking, each frame stored once: ~0.88 MB, so ~1.8 GB at 2048 unrolls)."""
    replay_capacity: int = 2048
    """Unrolls kept; the oldest is evicted first. An Atari unroll of 121 steps takes ~0.88 MB with
    learner-side stacking (frames stored once; 2048 of them: ~1.8 GB), ~3.4 MB with the actors' stacks."""
    min_replay_size: int = 256
    """Unrolls in replay before training starts."""
    replay_ratio: float = 4.0
    """Average times each unroll inserted after the first min_replay_size is sampled; training waits rather
    than exceed it."""
    priority_exponent: float = 0.9
    """alpha: unrolls are sampled with probability p^alpha / sum p^alpha."""
    importance_exponent: float = 0.6
    """beta: importance weights (N P(i))^-beta, normalised by the batch maximum."""
    priority_eta: float = 0.9
    """eta: an unroll's priority is eta max|delta| + (1 - eta) mean|delta|."""
    initial_priority: Literal["inference", "max"] = "inference"
    """A new unroll's priority: inference (SEED's) computes it from the Q values inference took its actions
    with, stored with each step: n-step targets bootstrapped from the Q of the actions taken, no target
    network; max gives it the largest priority seen so far."""

    # Exploration
    epsilon_base: float = 0.4
    """Env slot i explores with eps_i = epsilon_base ** (1 + epsilon_alpha * i / (epsilon_envs - 1))."""
    epsilon_alpha: float = 7.0
    """See epsilon_base."""
    epsilon_envs: int = 256
    """N of the epsilon schedule: slots i >= N reuse eps_(i mod N). ``aioseed run`` sets it to its env count."""
    eval_epsilon: float = 0.001
    """Epsilon of evaluation envs (actors started with --evaluation); their steps are not stored."""

    # Network
    network: NetworkKind = "auto"
    """Torso: as V-trace's --impala.network (auto: by the observation's shape and dtype)."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the MLP torso."""
    lstm_size: int = 512
    """Units of the LSTM core."""
    dueling_hidden: int = 512
    """Units of the ReLU layer between the LSTM and each dueling stream's head, value and advantage (SEED's 512,
    with an advantage head without bias); 0 puts both heads on the LSTM's output."""
    previous_action_reward: bool = True
    """The action taken at the previous step (one-hot; the epsilon-greedy one) and the reward that led to the
    observation (clipped as the loss's, ``reward_clipping``) join the torso's output as the LSTM's input, as
    in SEED's network. Both are zero at an episode's start."""

    def epsilons(self, slots: np.ndarray) -> np.ndarray:
        """<float32>[B] eps_i for env slots i (Ape-X / SEED schedule)."""
        i = np.asarray(slots) % self.epsilon_envs
        exponent = 1.0 + self.epsilon_alpha * i / max(self.epsilon_envs - 1, 1)
        return (self.epsilon_base**exponent).astype(np.float32)

    def __post_init__(self) -> None:
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")
        if self.n_steps < 1 or self.burn_in < 0 or self.lstm_size < 1 or self.dueling_hidden < 0:
            raise ValueError("n_steps and lstm_size must be >= 1, burn_in and dueling_hidden >= 0")
        if not 0 < self.min_replay_size <= self.replay_capacity:
            raise ValueError(
                f"min_replay_size must be in [1, replay_capacity={self.replay_capacity}], got {self.min_replay_size}"
            )
        if self.replay_ratio <= 0:
            raise ValueError(f"replay_ratio must be positive, got {self.replay_ratio}")
        if self.target_update_period < 1 or self.epsilon_envs < 1:
            raise ValueError("target_update_period and epsilon_envs must be >= 1")
        for name in ("priority_exponent", "importance_exponent", "priority_eta", "epsilon_base", "eval_epsilon"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
