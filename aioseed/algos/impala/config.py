"""Configuration of the V-trace (IMPALA) agent."""

from __future__ import annotations

import dataclasses
from typing import Literal

from aioseed.algos.schedule import OptimizerKind, ScheduleKind

NetworkKind = Literal["auto", "mlp", "nature_cnn", "impala_resnet", "football_resnet"]
"""Torsos ``build_policy_value`` knows (both agents take the same names)."""

InitKind = Literal["glorot", "orthogonal"]
"""Weight initialisations ``build_policy_value`` knows (``aioseed.algos.networks.Layers``)."""


@dataclasses.dataclass(frozen=True)
class ImpalaConfig:
    """V-trace actor-critic (Espeholt et al. 2018). Defaults suit CartPole-v1."""

    # Optimisation
    optimizer: OptimizerKind = "adam"
    """adam, or rmsprop (IMPALA's and torchbeast's choice)."""
    learning_rate: float = 1e-3
    """Base learning rate; the schedule scales it. The console changes the base while training. 0 freezes
    the networks (a sweep's control setting)."""
    adam_beta1: float = 0.9
    """Adam beta_1 (SEED uses 0: no momentum)."""
    adam_beta2: float = 0.999
    """Adam beta_2."""
    adam_epsilon: float = 1e-7
    """Adam epsilon."""
    rmsprop_decay: float = 0.99
    """RMSProp decay rho of the squared-gradient average."""
    rmsprop_momentum: float = 0.0
    """RMSProp momentum."""
    rmsprop_epsilon: float = 0.01
    """RMSProp epsilon (IMPALA: 0.01)."""
    lr_schedule: ScheduleKind = "constant"
    """constant; linear or cosine decay from the base rate to ``lr_final_fraction`` of it at ``lr_frames``."""
    lr_frames: int = 0
    """The schedule's frame budget (env frames, as the learner counts them); past it the rate stays at the end value."""
    lr_final_fraction: float = 0.0
    """The schedule's end value as a fraction of the base rate."""
    target_kl: float | None = None
    """Sample reuse: adapt the rate in effect after each update to keep the approximate KL between the
    batch's starting policy and the current one near this (rl_games' adaptive rate, which solves Pong in
    ~4M frames with 0.01; rsl_rl's PPO): times 1.5 when an update's KL is under half of it, divided by
    1.5 when over twice it, within [1e-6, 1e-2]. The schedule and the console's base rate still scale it.
    Its factor is checkpointed, so a run's checkpoints written without it do not resume with it (the
    learner refuses them). None: the rate follows the schedule alone."""
    max_grad_norm: float | None = 1.0
    """Clip the global gradient norm to this value (None: no clipping). On CartPole, 1.0 prevented the
    occasional collapse to a deterministic policy seen with 40 (1 run in 13) and learned faster."""

    # Loss
    discount: float = 0.99
    """gamma."""
    baseline_cost: float = 0.5
    """Weight of the value loss."""
    entropy_cost: float = 0.01
    """Weight of the entropy bonus (the start of its schedule)."""
    entropy_schedule: ScheduleKind = "constant"
    """constant; linear or cosine decay of the entropy cost to ``entropy_final_fraction`` of it at ``entropy_frames``."""
    entropy_frames: int = 0
    """The entropy schedule's frame budget (env frames, as the learner counts them); past it the cost stays at the end value."""
    entropy_final_fraction: float = 0.0
    """The entropy schedule's end value as a fraction of ``entropy_cost``."""
    clip_rho_threshold: float = 1.0
    """rho-bar: importance weight clip in the V-trace targets."""
    clip_pg_rho_threshold: float = 1.0
    """Importance weight clip in the policy-gradient advantages."""
    lambda_: float = 1.0
    """Trace mixing lambda of V-trace."""
    reward_clipping: Literal["none", "abs", "soft_asymmetric"] = "none"
    """none; abs clips to [-reward_clip, reward_clip] (Atari: 1); soft_asymmetric is SEED's 5*tanh(r/5) with
    negatives scaled by 0.3. Returns in logs and the console stay unclipped."""
    reward_clip: float = 1.0
    """Threshold of ``abs`` clipping."""
    normalize_advantages: bool = False
    """Scale the policy-gradient advantages to mean 0 and std 1 over each (mini)batch, as PPO implementations do."""
    normalize_observations: bool = False
    """Vector observations: the MLP sees them shifted and scaled by the running mean and variance of every
    observation trained on, clipped to +-observation_clip (``aioseed.algos.normalization``; checkpointed, and
    sent to IMPALA actors with the weights). CleanRL's PPO for MuJoCo does this."""
    observation_clip: float = 10.0
    """Bound of normalised observations."""
    scale_rewards: bool = False
    """Divide the rewards the loss sees by the running standard deviation of each env's discounted return, then
    clip them to +-scaled_reward_clip (gymnasium's NormalizeReward, on the learner). CleanRL's PPO for MuJoCo
    does this; returns in logs and the console stay unscaled."""
    scaled_reward_clip: float = 10.0
    """Bound of scaled rewards."""

    # Sample reuse (PPO-style; the defaults are plain IMPALA: one pass, one update per batch)
    targets: Literal["vtrace", "gae"] = "vtrace"
    """Advantage estimator when ``epochs`` or ``minibatches`` > 1 or ``ppo_clip`` is set: vtrace (corrects for
    the actors' policy lag; lambda_ is V-trace's) or gae (GAE with lambda_, no correction)."""
    epochs: int = 1
    """Passes over each batch of unrolls. Each pass is ``minibatches`` updates, so the policy lag grows."""
    minibatches: int = 1
    """Updates per pass: the batch's unrolls (or transitions, see ``minibatch``) are shuffled and split into
    this many groups."""
    minibatch: Literal["unrolls", "transitions"] = "unrolls"
    """What sample reuse shuffles into minibatches: whole unrolls (any network), or single transitions across
    the whole batch, as PPO implementations do (feedforward networks without previous_action_reward)."""
    ppo_clip: float | None = None
    """Clip the probability ratio to the batch's starting policy at 1 +- this (PPO's epsilon, e.g. 0.1);
    None: the plain policy gradient. With sample reuse, set it."""
    proximal: Literal["network", "behaviour"] = "network"
    """With sample reuse, the batch's starting policy and values (the ratio's denominator, the targets' baseline):
    network: one forward pass of the network over the batch when it arrives, before its updates; behaviour: the
    logits and values inference gave as the batch was acted (stored with each step), so the train step makes no
    such pass (a sixth of atari-fast's train step here). CleanRL's PPO takes the behaviour's; with synchronous
    acting the two are the same policy. With bounded or async acting, behaviour also clips each update against the
    acting policy, so a stale batch moves the network less."""

    # Network
    network: NetworkKind = "auto"
    """auto: the Nature CNN for stacked uint8 frames [stack, H, W], SEED's Football ResNet
    (football_resnet) for channels-last maps [H, W, C], the MLP otherwise. impala_resnet is the IMPALA
    deep torso (about 8x slower than the Nature CNN on this CPU)."""
    init: InitKind = "glorot"
    """Weight initialisation: glorot (Keras's default) or orthogonal with the PPO references' gains (sqrt 2 in
    the torso, 1 on the value head, 0.01 on the policy head, 1 in an LSTM core). Starting features of the
    Nature CNN on Pong are ~8x larger in RMS with orthogonal."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden layer sizes of the MLP torso."""
    shared_torso: bool = False
    """One MLP torso for both heads; by default the value has its own."""
    activation: Literal["tanh", "relu"] = "tanh"
    """Activation of the MLP torso."""
    jit_compile: bool = False
    """Compile inference and the train step with XLA. Off: on this 2-core CPU it made the convnets slower
    (see docs/benchmarks.md); try it on GPUs."""
    previous_action_reward: bool = False
    """Feed the previous action (one-hot) and the (clipped) reward that led to each observation into the
    network, after the torso (into the LSTM core when there is one), as SEED's recurrent nets do."""
    lstm_size: int = 0
    """Units of an LSTM core between the torso and the heads (0: feedforward). The learner keeps each
    env's state and stores it with every unroll; training replays the core from it. SEED uses 256."""
    log_std: Literal["free", "state"] = "free"
    """Box actions (a tanh-squashed Gaussian): free, one learned log standard deviation per action dimension
    (state-independent, as CleanRL's PPO); state, a head of the torso's features (as SEED's and SAC's)."""
    init_log_std: float = 0.0
    """Box actions: the log standard deviation the policy starts from (the state head's bias)."""

    @property
    def reuses_samples(self) -> bool:
        """Targets are computed once per batch, then updated on in epochs and minibatches (PPO-style)."""
        return self.epochs > 1 or self.minibatches > 1 or self.ppo_clip is not None

    @classmethod
    def from_dict(cls, fields: dict) -> ImpalaConfig:
        """From ``dataclasses.asdict`` output read back from JSON (lists become tuples); unknown keys, e.g.
        of an older or newer aioseed, are ignored."""
        known = {field.name for field in dataclasses.fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items() if k in known})

    def __post_init__(self) -> None:
        if self.learning_rate < 0:
            raise ValueError(f"learning_rate must be >= 0 (0 freezes the networks: a sweep's control), got {self.learning_rate}")
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {self.discount}")
        if not 0.0 <= self.lambda_ <= 1.0:
            raise ValueError(f"lambda_ must be in [0, 1], got {self.lambda_}")
        if self.lstm_size < 0:
            raise ValueError(f"lstm_size must be >= 0, got {self.lstm_size}")
        if self.lr_schedule != "constant" and self.lr_frames <= 0:
            raise ValueError(f"lr_schedule {self.lr_schedule!r} needs the frame budget lr_frames > 0")
        if not 0.0 <= self.lr_final_fraction <= 1.0:
            raise ValueError(f"lr_final_fraction must be in [0, 1], got {self.lr_final_fraction}")
        if self.entropy_schedule != "constant" and self.entropy_frames <= 0:
            raise ValueError(f"entropy_schedule {self.entropy_schedule!r} needs the frame budget entropy_frames > 0")
        if not 0.0 <= self.entropy_final_fraction <= 1.0:
            raise ValueError(f"entropy_final_fraction must be in [0, 1], got {self.entropy_final_fraction}")
        if self.epochs < 1 or self.minibatches < 1:
            raise ValueError(f"epochs and minibatches must be >= 1, got {self.epochs} and {self.minibatches}")
        if self.minibatch == "transitions" and (self.lstm_size or self.previous_action_reward):
            raise ValueError(
                "minibatch transitions needs a feedforward network: an LSTM core or previous_action_reward "
                "replays whole unrolls (use minibatch unrolls)"
            )
        if self.scale_rewards and self.previous_action_reward:
            raise ValueError("scale_rewards with previous_action_reward: the network would see scaled rewards in training and raw ones when acting")
        if self.ppo_clip is not None and not 0.0 < self.ppo_clip < 1.0:
            raise ValueError(f"ppo_clip must be in (0, 1) or None, got {self.ppo_clip}")
        if self.observation_clip <= 0 or self.scaled_reward_clip <= 0:
            raise ValueError("observation_clip and scaled_reward_clip must be positive")
        if self.reward_clip <= 0:
            raise ValueError(f"reward_clip must be positive, got {self.reward_clip}")
        if self.proximal == "behaviour" and not self.reuses_samples:
            raise ValueError("proximal behaviour needs sample reuse (epochs, minibatches or ppo_clip): one pass has no proximal policy")
        if self.target_kl is not None and not (self.target_kl > 0 and self.reuses_samples):
            raise ValueError(f"target_kl must be positive and needs sample reuse (epochs, minibatches or ppo_clip), got {self.target_kl}")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be positive or None, got {self.max_grad_norm}")
