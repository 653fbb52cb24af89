"""Value rescaling h and its exact inverse (Pohlen et al. 2018, "Observe and Look Further"; used by R2D2).

Pure elementwise functions: regress Q(x, a) towards h(G) instead of G, so targets of very
different magnitudes train with similar gradients.
"""

from __future__ import annotations

import tensorflow as tf


def value_rescale(x: tf.Tensor, eps: float = 1e-3) -> tf.Tensor:
    """h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x  (R2D2, section 2; Pohlen et al. 2018, eq. 4)."""
    return tf.sign(x) * (tf.sqrt(tf.abs(x) + 1.0) - 1.0) + eps * x


def inverse_value_rescale(x: tf.Tensor, eps: float = 1e-3) -> tf.Tensor:
    """The exact inverse of ``value_rescale`` (Pohlen et al. 2018, proposition A.2):

    h^-1(x) = sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1).
    """
    root = (tf.sqrt(1.0 + 4.0 * eps * (tf.abs(x) + 1.0 + eps)) - 1.0) / (2.0 * eps)
    return tf.sign(x) * (tf.square(root) - 1.0)
