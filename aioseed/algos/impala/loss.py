"""The IMPALA loss on time-major unrolls of T + 1 steps (pure functions).

Step t of an unroll holds observation x_t, the action a_t chosen from it and its
behaviour logits, plus the reward r_{t-1} and ``done_t`` of the transition that
led to it (SEED's layout). So the transition t -> t+1 has reward ``reward[t+1]``
and discount ``gamma * (1 - done[t+1])``. A ``phantom`` step (a truncated
episode's final observation, whose action never ran) only serves as the
bootstrap of the step before it: its importance weight is zero, so
v_s = V(x_s) there, and it is masked out of all three loss terms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import tensorflow as tf

from aioseed.algos import gae, vtrace
from aioseed.algos.distributions import Categorical, Distribution

CATEGORICAL = Categorical()
"""The losses' default distribution: a softmax over the logits."""


class Diagnostics(NamedTuple):
    """How far the policy being trained has drifted from the one that acted, and how well V fits.

    All are means over the valid steps of ``[T, B]``; rho_t = pi(a_t | x_t) / mu(a_t | x_t).
    """

    kl_behaviour: tf.Tensor
    """KL(mu || pi) of the whole action distributions: the behaviour policy's drift from pi."""
    rho_clipped_mean: tf.Tensor
    """Mean of min(1, rho_t): 1 on-policy; V-trace's traces shrink as it falls."""
    rho_below_half: tf.Tensor
    """Share of steps with rho_t < 0.5 (traces cut at least in half)."""
    explained_variance: tf.Tensor
    """1 - Var[G - V] / Var[G] of the value targets G: 1 is a perfect fit, 0 no better than their mean."""
    entropy: tf.Tensor
    """Mean entropy of pi (nats)."""


class ImpalaLosses(NamedTuple):
    total: tf.Tensor
    policy_gradient: tf.Tensor
    baseline: tf.Tensor
    entropy: tf.Tensor
    diagnostics: Diagnostics
    """The network's drift from the behaviour policy and its value fit, on this batch."""


class SurrogateLosses(NamedTuple):
    total: tf.Tensor
    policy_gradient: tf.Tensor
    baseline: tf.Tensor
    entropy: tf.Tensor
    clip_fraction: tf.Tensor
    """Share of valid steps whose probability ratio left [1 - epsilon, 1 + epsilon]."""
    approx_kl: tf.Tensor
    """Mean of (ratio - 1) - log ratio: KL(proximal || current) estimate (Schulman's k3)."""


class Targets(NamedTuple):
    advantages: tf.Tensor
    """<float32>[T, B] policy-gradient advantages (V-trace: weighted by the clipped importance ratio)."""
    value_targets: tf.Tensor
    """<float32>[T, B] regression targets of V(x_t)."""
    valid: tf.Tensor
    """<float32>[T, B] 1 for real steps, 0 for phantom rows (a truncated episode's final observation)."""


def _identity(x: tf.Tensor) -> tf.Tensor:
    return x


def normalize(
    advantages: tf.Tensor,
    valid: tf.Tensor,
    epsilon: float = 1e-8,
    cross_replica_sum: Callable[[tf.Tensor], tf.Tensor] = _identity,
) -> tf.Tensor:
    """``advantages`` shifted and scaled to mean 0 and standard deviation 1 over the ``valid`` steps.

    ``cross_replica_sum`` sums a tensor over data-parallel replicas (``aioseed.algos.replicas.replica_sum``),
    so that the statistics are the whole batch's when each replica holds a share of it.
    """
    count = tf.maximum(cross_replica_sum(tf.reduce_sum(valid)), 1.0)
    mean = cross_replica_sum(tf.reduce_sum(advantages * valid)) / count
    variance = cross_replica_sum(tf.reduce_sum(tf.square(advantages - mean) * valid)) / count
    return (advantages - mean) / (tf.sqrt(variance) + epsilon) * valid


def diagnostics(
    logits: tf.Tensor,
    values: tf.Tensor,
    behaviour_logits: tf.Tensor,
    actions: tf.Tensor,
    value_targets: tf.Tensor,
    valid: tf.Tensor,
    cross_replica_sum: Callable[[tf.Tensor], tf.Tensor] = _identity,
    distribution: Distribution = CATEGORICAL,
) -> Diagnostics:
    """Policy drift and value fit over the T transitions (gradients stopped).

    Args:
      logits: <float32>[T, B, A] pi's logits (the proximal policy, or the network of a one-pass update).
      values: <float32>[T, B] its V(x_t).
      behaviour_logits: <float32>[T, B, A] mu's logits, which chose the actions.
      actions: <int32>[T, B] a_t.
      value_targets: <float32>[T, B] the regression targets of V(x_t).
      valid: <float32>[T, B] 0 for phantom steps.
      cross_replica_sum: as ``normalize``'s: every replica then gets the whole batch's figures.
      distribution: how the logits (a distribution's parameters) and actions read (``aioseed.algos.distributions``).
    """
    logits, values, behaviour_logits = (tf.stop_gradient(x) for x in (logits, values, behaviour_logits))
    count = tf.maximum(cross_replica_sum(tf.reduce_sum(valid)), 1.0)

    def mean(x: tf.Tensor) -> tf.Tensor:
        return cross_replica_sum(tf.reduce_sum(x * valid)) / count

    kl = distribution.kl(behaviour_logits, logits)
    rho = tf.exp(distribution.log_prob(logits, actions) - distribution.log_prob(behaviour_logits, actions))
    target_mean = mean(value_targets)
    target_variance = mean(tf.square(value_targets - target_mean))
    errors = value_targets - values
    error_variance = mean(tf.square(errors - mean(errors)))
    return Diagnostics(
        kl_behaviour=mean(kl),
        rho_clipped_mean=mean(tf.minimum(rho, 1.0)),
        rho_below_half=mean(tf.cast(rho < 0.5, tf.float32)),
        explained_variance=1.0 - error_variance / tf.maximum(target_variance, 1e-8),
        entropy=mean(distribution.entropy(logits)),
    )


def targets(
    logits: tf.Tensor,
    values: tf.Tensor,
    behaviour_logits: tf.Tensor,
    actions: tf.Tensor,
    rewards: tf.Tensor,
    done: tf.Tensor,
    phantom: tf.Tensor,
    *,
    discount: float,
    kind: str = "vtrace",
    lambda_: float = 1.0,
    clip_rho_threshold: float = 1.0,
    clip_pg_rho_threshold: float = 1.0,
    distribution: Distribution = CATEGORICAL,
) -> Targets:
    """Advantages and value targets of the T transitions of ``[T + 1, B]`` unrolls (gradients stopped).

    Args as ``impala_loss``; ``logits`` and ``values`` come from the policy being evaluated.
    kind: "vtrace" corrects for the behaviour policy with truncated importance weights (the advantages
      include the clipped weight rho_t); "gae" is GAE(gamma, lambda) on ``values``, with no correction.
    """
    valid = 1.0 - tf.cast(phantom[:-1], tf.float32)
    discount_t = discount * (1.0 - tf.cast(done[1:], tf.float32))
    r_t, v_tm1, v_t = rewards[1:], values[:-1], values[1:]
    if kind == "gae":
        result = gae.generalized_advantage_estimation(r_t, discount_t, v_tm1, v_t, lambda_, valid_t=valid)
        return Targets(result.advantages * valid, result.returns, valid)
    if kind != "vtrace":
        raise ValueError(f"unknown targets {kind!r}; known: vtrace, gae")
    log_rho_tm1 = distribution.log_prob(logits[:-1], actions[:-1]) - distribution.log_prob(behaviour_logits[:-1], actions[:-1])
    # A phantom step's action never ran: a zero weight makes v_s = V(x_s) there and cuts the trace.
    log_rho_tm1 = tf.where(valid > 0, log_rho_tm1, tf.fill(tf.shape(log_rho_tm1), float("-inf")))
    result = vtrace.from_importance_weights(
        v_tm1, v_t, r_t, discount_t, log_rho_tm1, clip_rho_threshold, clip_pg_rho_threshold, lambda_
    )
    return Targets(result.pg_advantages, result.vs, valid)


def impala_loss(
    logits: tf.Tensor,
    values: tf.Tensor,
    behaviour_logits: tf.Tensor,
    actions: tf.Tensor,
    rewards: tf.Tensor,
    done: tf.Tensor,
    phantom: tf.Tensor,
    *,
    discount: float,
    baseline_cost: float,
    entropy_cost: float | tf.Tensor,
    clip_rho_threshold: float = 1.0,
    clip_pg_rho_threshold: float = 1.0,
    lambda_: float = 1.0,
    normalize_advantages: bool = False,
    cross_replica_sum: Callable[[tf.Tensor], tf.Tensor] = _identity,
    distribution: Distribution = CATEGORICAL,
) -> ImpalaLosses:
    """Policy gradient with V-trace advantages + baseline loss - entropy bonus.

    Args:
      logits: <float32>[T+1, B, A] target-policy logits (the learner's network).
      values: <float32>[T+1, B] V(x_t) from the learner's network.
      behaviour_logits: <float32>[T+1, B, A] logits that chose the actions.
      actions: <int32>[T+1, B] a_t.
      rewards: <float32>[T+1, B] reward leading to step t (already clipped).
      done: <bool>[T+1, B] the transition into step t crossed an episode end.
      phantom: <bool>[T+1, B] step t is a truncated episode's final observation.
      normalize_advantages: scale the advantages to mean 0, std 1 over the batch's valid steps.
      cross_replica_sum: as ``normalize``'s, when this is one replica's share of the batch.
      distribution: as ``diagnostics``'.
    Returns:
      Scalar losses, averaged over the T x B steps.
    """
    t = targets(
        logits,
        values,
        behaviour_logits,
        actions,
        rewards,
        done,
        phantom,
        discount=discount,
        lambda_=lambda_,
        clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold,
        distribution=distribution,
    )
    advantages = normalize(t.advantages, t.valid, cross_replica_sum=cross_replica_sum) if normalize_advantages else t.advantages
    count = tf.cast(tf.size(t.valid), tf.float32)
    pg = -tf.reduce_sum(distribution.log_prob(logits[:-1], actions[:-1]) * advantages * t.valid) / count
    baseline = 0.5 * tf.reduce_sum(tf.square(t.value_targets - values[:-1]) * t.valid) / count
    entropy_loss = -tf.reduce_sum(distribution.entropy(logits[:-1]) * t.valid) / count
    total = pg + baseline_cost * baseline + entropy_cost * entropy_loss
    drift = diagnostics(
        logits[:-1], values[:-1], behaviour_logits[:-1], actions[:-1], t.value_targets, t.valid, cross_replica_sum, distribution
    )
    return ImpalaLosses(total=total, policy_gradient=pg, baseline=baseline, entropy=entropy_loss, diagnostics=drift)


def clipped_surrogate_loss(
    logits: tf.Tensor,
    values: tf.Tensor,
    proximal_log_probs: tf.Tensor,
    actions: tf.Tensor,
    advantages: tf.Tensor,
    value_targets: tf.Tensor,
    valid: tf.Tensor,
    *,
    clip_epsilon: float | None,
    baseline_cost: float,
    entropy_cost: float | tf.Tensor,
    distribution: Distribution = CATEGORICAL,
) -> SurrogateLosses:
    """PPO's clipped surrogate (Schulman et al. 2017, eq. 7) + baseline loss - entropy bonus.

    The ratio is taken to the proximal policy, the network as it was when the batch's targets
    were computed, not to the behaviour policy that acted (decoupled PPO, Hilton et al. 2021):
    V-trace advantages already correct for the behaviour policy, so the actors' policy lag does
    not eat into the clipping range.

    Args:
      logits: <float32>[T, B, A] the current network's logits.
      values: <float32>[T, B] its V(x_t).
      proximal_log_probs: <float32>[T, B] log pi_prox(a_t | x_t).
      actions: <int32>[T, B] a_t.
      advantages: <float32>[T, B] from ``targets`` (normalized or not).
      value_targets: <float32>[T, B] from ``targets``.
      valid: <float32>[T, B] 0 for phantom steps.
      clip_epsilon: the ratio is clipped to [1 - epsilon, 1 + epsilon] (None: not clipped; the
        importance-weighted policy gradient).
      distribution: as ``diagnostics``'.
    Returns:
      Scalar losses, averaged over the T x B steps.
    """
    count = tf.cast(tf.size(valid), tf.float32)
    log_ratio = (distribution.log_prob(logits, actions) - proximal_log_probs) * valid
    ratio = tf.exp(log_ratio)
    epsilon = float("inf") if clip_epsilon is None else clip_epsilon
    clipped = tf.clip_by_value(ratio, 1.0 - epsilon, 1.0 + epsilon)
    surrogate = tf.minimum(ratio * advantages, clipped * advantages)
    pg = -tf.reduce_sum(surrogate * valid) / count
    baseline = 0.5 * tf.reduce_sum(tf.square(value_targets - values) * valid) / count
    entropy_loss = -tf.reduce_sum(distribution.entropy(logits) * valid) / count
    valid_count = tf.maximum(tf.reduce_sum(valid), 1.0)
    clip_fraction = tf.reduce_sum(tf.cast(tf.abs(ratio - 1.0) > epsilon, tf.float32) * valid) / valid_count
    approx_kl = tf.reduce_sum(((ratio - 1.0) - log_ratio) * valid) / valid_count
    return SurrogateLosses(
        total=pg + baseline_cost * baseline + entropy_cost * entropy_loss,
        policy_gradient=pg,
        baseline=baseline,
        entropy=entropy_loss,
        clip_fraction=clip_fraction,
        approx_kl=approx_kl,
    )
