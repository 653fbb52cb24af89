"""The Adam optimizer agents train with, and the learning-rate control the console uses."""

from __future__ import annotations

import keras


def adam(learning_rate: float, epsilon: float, max_grad_norm: float | None, variables: list) -> keras.optimizers.Adam:
    """Adam with global-norm gradient clipping, built for ``variables`` (so checkpoints restore into it)."""
    optimizer = keras.optimizers.Adam(learning_rate=learning_rate, epsilon=epsilon, global_clipnorm=max_grad_norm)
    optimizer.build(variables)
    return optimizer


class LearningRateControl:
    """``learning_rate`` / ``set_learning_rate`` over ``self.optimizer`` (applied between train steps)."""

    optimizer: keras.optimizers.Optimizer

    @property
    def learning_rate(self) -> float:
        return float(keras.ops.convert_to_numpy(self.optimizer.learning_rate))

    def set_learning_rate(self, value: float) -> None:
        if not value > 0:
            raise ValueError(f"learning_rate must be positive, got {value}")
        self.optimizer.learning_rate = value  # assigns the optimizer's variable
