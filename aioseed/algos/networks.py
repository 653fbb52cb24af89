"""Networks shared by the agents (Keras 3 layers on the TensorFlow backend)."""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from aioseed.action_space import LOG_STD_MAX, LOG_STD_MIN
from aioseed.algos.distributions import Distribution, TanhGaussian, gaussian_params
from aioseed.algos.normalization import RunningNormalizer
from aioseed.algos.tanh_gaussian import squashed_log_std
from aioseed.spec import EnvSpec

TORSO_GAIN = float(np.sqrt(2.0))
"""Orthogonal gain of torso layers followed by ReLU or tanh (CleanRL's ``layer_init``, Engstrom et al. 2020)."""


@dataclasses.dataclass(frozen=True)
class Layers:
    """How a network's layers are made: their initialisation, and the precision the torso computes in."""

    init: str = "glorot"
    """glorot (Keras's Glorot-uniform default), or orthogonal with the PPO references' gains: sqrt 2 in the
    torso, 1 on the value head (the policy head is orthogonal 0.01 either way)."""
    precision: str = "float32"
    """float32, or bfloat16: the torso computes in bfloat16 (Keras's mixed_bfloat16: float32 weights) and the
    heads, the recurrent core and the loss stay float32."""

    def __post_init__(self) -> None:
        if self.init not in ("glorot", "orthogonal"):
            raise ValueError(f"unknown init {self.init!r}; known: glorot, orthogonal")
        if self.precision not in ("float32", "bfloat16"):
            raise ValueError(f"unknown precision {self.precision!r}; known: float32, bfloat16")

    def kernel(self, gain: float = TORSO_GAIN) -> keras.initializers.Initializer | str:
        """The kernel initializer of a layer whose orthogonal gain would be ``gain``."""
        return keras.initializers.Orthogonal(gain) if self.init == "orthogonal" else "glorot_uniform"

    @property
    def torso_dtype(self) -> str:
        """The Keras dtype policy of torso layers."""
        return "mixed_bfloat16" if self.precision == "bfloat16" else "float32"

    def conv(self, filters: int, size: int, **options: object) -> keras.layers.Conv2D:
        """A torso convolution."""
        return keras.layers.Conv2D(filters, size, kernel_initializer=self.kernel(), dtype=self.torso_dtype, **options)

    def dense(self, units: int, **options: object) -> keras.layers.Dense:
        """A torso dense layer."""
        return keras.layers.Dense(units, kernel_initializer=self.kernel(), dtype=self.torso_dtype, **options)


# Layer stacks are keras.Sequential, not Python lists: tf.train.Checkpoint tracks layers held in
# attributes but not in lists, so a list's variables would be saved only through the optimizer
# (and never for a target network, which has no optimizer).


def mlp(hidden_sizes: tuple[int, ...], activation: str, layers: Layers = Layers(), layer_norm: bool = False) -> keras.Sequential:
    """Dense layers of ``hidden_sizes``, each followed by ``activation``; with ``layer_norm``, by layer
    normalisation and then ``activation`` (the critics of RLPD, Ball et al. 2023, and BRO, Nauman et al. 2024)."""
    if not layer_norm:
        return keras.Sequential([layers.dense(size, activation=activation) for size in hidden_sizes])
    blocks = [[layers.dense(size), keras.layers.LayerNormalization(), keras.layers.Activation(activation)] for size in hidden_sizes]
    return keras.Sequential([layer for block in blocks for layer in block])


def flatten_observations(observations: tf.Tensor) -> tf.Tensor:
    """[B, ...] -> <float32>[B, F]."""
    return tf.reshape(tf.cast(observations, tf.float32), [tf.shape(observations)[0], -1])


def merge_time_batch(x: tf.Tensor) -> tf.Tensor:
    """[T, B, ...] -> [T * B, ...]."""
    shape = tf.shape(x)
    return tf.reshape(x, tf.concat([[shape[0] * shape[1]], shape[2:]], 0))


def split_time_batch(x: tf.Tensor, like: tf.Tensor) -> tf.Tensor:
    """[T * B, ...] -> [T, B, ...] with T and B taken from ``like``."""
    return tf.reshape(x, tf.concat([tf.shape(like)[:2], tf.shape(x)[1:]], 0))


class GaussianHead(keras.layers.Layer):
    """``[mean, log_std]`` <float32>[B, 2A] of a diagonal Gaussian (``aioseed.algos.distributions.TanhGaussian``'s
    parameters); ``log_std`` from a head of the features (``state_dependent``) or one learned vector."""

    def __init__(self, size: int, state_dependent: bool, init_log_std: float = 0.0, squash_log_std: bool = False, **kwargs) -> None:
        """``squash_log_std``: map the log-std head's output into [LOG_STD_MIN, LOG_STD_MAX] by a rescaled tanh
        (CleanRL's SAC; it starts near the middle, std ~0.22) instead of clipping it there."""
        super().__init__(**kwargs)
        self.size = size
        self.squash_log_std = squash_log_std
        self.mean = keras.layers.Dense(size, kernel_initializer=keras.initializers.Orthogonal(0.01))
        start = keras.initializers.Constant(init_log_std)
        self.log_std = (
            keras.layers.Dense(size, kernel_initializer=keras.initializers.Orthogonal(0.01), bias_initializer=start)
            if state_dependent
            else None
        )
        self.free_log_std = None if state_dependent else self.add_weight(shape=(size,), initializer=start, name="log_std")

    def call(self, x: tf.Tensor) -> tf.Tensor:
        mean = self.mean(x)
        log_std = self.log_std(x) if self.log_std is not None else tf.broadcast_to(self.free_log_std, tf.shape(mean))
        if self.squash_log_std:
            log_std = squashed_log_std(log_std, LOG_STD_MIN, LOG_STD_MAX)
        return gaussian_params(mean, log_std)


def policy_head(distribution: Distribution, state_dependent_std: bool = False, init_log_std: float = 0.0) -> keras.layers.Layer:
    """The layer that outputs ``distribution``'s parameters: logits (a dense layer, orthogonal 0.01, as the
    PPO references), or a ``GaussianHead``."""
    if isinstance(distribution, TanhGaussian):
        return GaussianHead(distribution.size, state_dependent_std, init_log_std)
    return keras.layers.Dense(distribution.params_size, kernel_initializer=keras.initializers.Orthogonal(0.01))


class PolicyValue(keras.Model):
    """Policy logits (a distribution's parameters) and a value from a torso's ``features``; subclasses define
    the torso.

    ``state_shapes``, ``step`` and ``unroll`` are the interface agents use, the
    same for recurrent networks (``aioseed.algos.recurrent``); here the state is empty.
    """

    def __init__(self, policy: int | keras.layers.Layer, layers: Layers = Layers(), **kwargs) -> None:
        """``policy``: the policy head, or the number of logits of a dense one."""
        super().__init__(**kwargs)
        self.layer_options = layers
        if isinstance(policy, int):
            policy = keras.layers.Dense(policy, kernel_initializer=keras.initializers.Orthogonal(0.01))
        self.policy = policy
        self.value = keras.layers.Dense(1, kernel_initializer=layers.kernel(1.0))

    def features(self, observations: tf.Tensor) -> tf.Tensor:
        """<float32>[B, F] (a bfloat16 torso's output is cast back, for the heads, extras and the core)."""
        raise NotImplementedError

    def heads(self, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """<float32>[B, F] -> (logits <float32>[B, A], value <float32>[B])."""
        return self.policy(x), tf.squeeze(self.value(x), -1)

    def call(self, observations: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return self.heads(self.features(observations))

    def state_shapes(self) -> dict[str, tuple[int, ...]]:
        """Per-row recurrent state (none)."""
        return {}

    def step(
        self, observations: tf.Tensor, state: dict[str, tf.Tensor], extras: tf.Tensor | None = None
    ) -> tuple[tf.Tensor, tf.Tensor, dict]:
        """One step for ``[B, ...]`` rows: (logits, value, next state).

        ``extras`` (<float32>[B, E], e.g. the previous action and reward) join the torso's features
        before the heads; networks given extras need a shared torso.
        """
        if extras is None:
            logits, value = self(observations)
        else:
            logits, value = self.heads(tf.concat([self.features(observations), extras], -1))
        return logits, value, {}

    def unroll(
        self,
        observations: tf.Tensor,
        state: dict[str, tf.Tensor],
        starts: tf.Tensor,
        extras: tf.Tensor | None = None,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Time-major ``[T, B, ...]`` (and ``extras`` <float32>[T, B, E]) -> (logits <float32>[T, B, A],
        values <float32>[T, B])."""
        merged = None if extras is None else merge_time_batch(extras)
        logits, values, _ = self.step(merge_time_batch(observations), {}, merged)
        return split_time_batch(logits, observations), split_time_batch(values, observations)


class MLPPolicyValue(PolicyValue):
    """MLP for vector observations: policy logits and a value.

    With ``shared_torso`` both heads sit on one torso; otherwise the value has
    its own (as in PPO implementations), so its large-scale regression
    gradients do not swamp the policy's features.
    """

    def __init__(
        self,
        policy: int | keras.layers.Layer,
        hidden_sizes: tuple[int, ...] = (64, 64),
        shared_torso: bool = False,
        activation: str = "tanh",
        layers: Layers = Layers(),
        normalizer: RunningNormalizer | None = None,
        **kwargs,
    ) -> None:
        """``normalizer``: scales the flattened observations first (``aioseed.algos.normalization``)."""
        super().__init__(policy, layers, **kwargs)
        self.normalizer = normalizer
        self.policy_torso = mlp(hidden_sizes, activation, layers)
        self.value_torso = None if shared_torso else mlp(hidden_sizes, activation, layers)

    def _inputs(self, observations: tf.Tensor) -> tf.Tensor:
        x = flatten_observations(observations)
        return x if self.normalizer is None else self.normalizer(x)

    def call(self, observations: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        if self.value_torso is None:
            return super().call(observations)
        x = self._inputs(observations)
        h, v = self.policy_torso(x), self.value_torso(x)
        return self.policy(h), tf.squeeze(self.value(v), -1)

    def features(self, observations: tf.Tensor) -> tf.Tensor:
        """The (policy) torso's output; a recurrent core feeds both heads from it (build with shared_torso)."""
        return tf.cast(self.policy_torso(self._inputs(observations)), tf.float32)


def frames_nhwc(observations: tf.Tensor) -> tf.Tensor:
    """uint8[B, stack, H, W] (ale-py's layout) -> float32[B, H, W, stack] in [0, 1], as TF's CPU convs want."""
    return tf.transpose(tf.cast(observations, tf.float32) / 255.0, [0, 2, 3, 1])


class NatureCNNPolicyValue(PolicyValue):
    """The Nature DQN torso (Mnih et al. 2015) with policy and value heads, for stacked frames.

    Takes ``uint8[B, stack, 84, 84]`` (channels first, as ale-py stacks them) and
    runs the convolutions channels-last, the layout TensorFlow's CPU kernels want.
    """

    def __init__(self, policy: int | keras.layers.Layer, layers: Layers = Layers(), **kwargs) -> None:
        super().__init__(policy, layers, **kwargs)
        self.torso = keras.Sequential([
            layers.conv(32, 8, strides=4, activation="relu"),
            layers.conv(64, 4, strides=2, activation="relu"),
            layers.conv(64, 3, strides=1, activation="relu"),
            keras.layers.Flatten(dtype=layers.torso_dtype),
            layers.dense(512, activation="relu"),
        ])

    def features(self, observations: tf.Tensor) -> tf.Tensor:
        return tf.cast(self.torso(frames_nhwc(observations)), tf.float32)


class ResidualBlock(keras.layers.Layer):
    """x + conv(relu(conv(relu(x))))."""

    def __init__(self, channels: int, layers: Layers = Layers(), **kwargs) -> None:
        super().__init__(dtype=layers.torso_dtype, **kwargs)
        self.first = layers.conv(channels, 3, padding="same")
        self.second = layers.conv(channels, 3, padding="same")

    def call(self, x: tf.Tensor) -> tf.Tensor:
        return x + self.second(tf.nn.relu(self.first(tf.nn.relu(x))))


class ResidualStage(keras.layers.Layer):
    """Conv, max-pool (stride 2), then two residual blocks (IMPALA, Espeholt et al. 2018, fig. 3)."""

    def __init__(self, channels: int, layers: Layers = Layers(), **kwargs) -> None:
        super().__init__(dtype=layers.torso_dtype, **kwargs)
        self.conv = layers.conv(channels, 3, padding="same")
        self.pool = keras.layers.MaxPool2D(3, strides=2, padding="same", dtype=layers.torso_dtype)
        self.blocks = keras.Sequential([ResidualBlock(channels, layers), ResidualBlock(channels, layers)])

    def call(self, x: tf.Tensor) -> tf.Tensor:
        return self.blocks(self.pool(self.conv(x)))


class ImpalaResNetPolicyValue(PolicyValue):
    """The IMPALA deep torso (stages of 16, 32, 32 channels) with policy and value heads.

    Frames are ``uint8[B, stack, H, W]`` (ale-py's layout), or ``uint8[B, H, W, C]`` with ``channels_last``.
    """

    def __init__(
        self,
        policy: int | keras.layers.Layer,
        channels: tuple[int, ...] = (16, 32, 32),
        channels_last: bool = False,
        layers: Layers = Layers(),
        **kwargs,
    ) -> None:
        super().__init__(policy, layers, **kwargs)
        self.channels_last = channels_last
        self.stages = keras.Sequential([ResidualStage(c, layers) for c in channels])
        self.flatten = keras.layers.Flatten(dtype=layers.torso_dtype)
        self.hidden = layers.dense(256, activation="relu")

    def features(self, observations: tf.Tensor) -> tf.Tensor:
        frames = tf.cast(observations, tf.float32) / 255.0 if self.channels_last else frames_nhwc(observations)
        return tf.cast(self.hidden(self.flatten(tf.nn.relu(self.stages(frames)))), tf.float32)


def football_resnet(policy: int | keras.layers.Layer, layers: Layers = Layers()) -> ImpalaResNetPolicyValue:
    """SEED's Google Research Football network: the IMPALA torso with a fourth stage (16, 32, 32, 32
    channels), on the channels-last Super Mini Map ``uint8[B, 72, 96, C]``, feedforward."""
    return ImpalaResNetPolicyValue(policy, channels=(16, 32, 32, 32), channels_last=True, layers=layers)


def is_channels_last(shape: tuple[int, ...]) -> bool:
    """An image [H, W, C] (e.g. the Super Mini Map) rather than stacked frames [stack, H, W]."""
    return len(shape) == 3 and shape[-1] < shape[0]


def build_policy_value(
    spec: EnvSpec,
    kind: str,
    hidden_sizes: tuple[int, ...] = (64, 64),
    shared_torso: bool = False,
    activation: str = "tanh",
    layers: Layers = Layers(),
    policy: int | keras.layers.Layer | None = None,
    normalizer: RunningNormalizer | None = None,
) -> PolicyValue:
    """The network ``kind`` names, its layers made as ``layers`` says. auto: for uint8 images, the
    Nature CNN on stacked frames [stack, H, W] and SEED's Football ResNet on channels-last maps [H, W, C];
    the MLP for everything else. ``policy``: the policy head (default: logits of the spec's Discrete actions);
    ``normalizer``: the MLP's observation normaliser (image torsos scale their pixels themselves)."""
    shape = spec.observation_shape
    head = spec.num_actions if policy is None else policy
    if kind == "auto":
        image = len(shape) == 3 and spec.dtype == np.uint8
        kind = "mlp" if not image else "football_resnet" if is_channels_last(shape) else "nature_cnn"
    if normalizer is not None and kind != "mlp":
        raise ValueError(f"observation normalisation is for vector observations (the MLP), not the {kind} torso")
    if kind == "nature_cnn":
        return NatureCNNPolicyValue(head, layers)
    if kind == "impala_resnet":
        return ImpalaResNetPolicyValue(head, channels_last=is_channels_last(shape), layers=layers)
    if kind == "football_resnet":
        return football_resnet(head, layers)
    if kind == "mlp":
        return MLPPolicyValue(head, hidden_sizes, shared_torso=shared_torso, activation=activation, layers=layers, normalizer=normalizer)
    raise ValueError(f"unknown network {kind!r}")
