"""The compute floor of a SAC update: its dense layers' arithmetic counted from the networks' kernels, at the
rate this machine multiplies matrices of the update's shape. What an update takes beyond that floor is
overhead (dispatch, small element-wise ops, copies, the optimizers' and Polyak's variable updates)."""

from __future__ import annotations

import time

import numpy as np
import tensorflow as tf


def dense_macs(variables: list[tf.Variable]) -> int:
    """Multiply-accumulates per row of one forward pass through every 2-D kernel in ``variables``."""
    return sum(int(np.prod(v.shape)) for v in variables if len(v.shape) == 2)


def sac_update_flops(actor_macs: int, critics_macs: int, rows: int, autotune_alpha: bool = True) -> float:
    """Float operations of one SAC update on ``rows`` transitions, counting matrix products only.

    ``critics_macs`` covers both Q networks (their targets are the same size). A backward pass costs twice its
    forward (gradients of the inputs and of the weights); where only the inputs' are needed, once. On the
    delayed rhythm the policy and the temperature average one update per critic update, so each is counted
    once. The critics' update: the policy on the next observations, the target critics, the critics forward
    and backward. The policy's: the policy, the critics and their input gradients, the policy's backward, and
    with ``autotune_alpha`` the temperature's fresh sample of the updated policy. First layers' input gradients
    are counted too, so this slightly overstates the work."""
    critic_update = actor_macs + critics_macs + 3 * critics_macs
    policy_update = actor_macs + 2 * critics_macs + 2 * actor_macs + (actor_macs if autotune_alpha else 0)
    return 2.0 * (critic_update + policy_update) * rows


def matmul_flops_per_s(rows: int, width: int, precision: str = "float32", seconds: float = 2.0, chain: int = 64) -> float:
    """This machine's rate on ``[rows, width] @ [width, width]`` products in ``precision``: ``chain`` of them per
    compiled call, so that the call's own cost is amortised; the better of a graph and an XLA call."""
    dtype = tf.as_dtype(precision)
    x = tf.cast(tf.random.normal([rows, width]), dtype)
    w = tf.cast(tf.random.normal([width, width], stddev=width**-0.5), dtype)

    def products(x: tf.Tensor) -> tf.Tensor:
        for _ in range(chain):
            x = tf.matmul(x, w)
        return x

    best = 0.0
    for jit in (False, True):
        call = tf.function(products, jit_compile=jit)
        call(x).numpy()  # trace and compile
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 2:
            call(x).numpy()
            calls += 1
        best = max(best, 2.0 * rows * width * width * chain * calls / (time.perf_counter() - start))
    return best
