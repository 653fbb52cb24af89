"""The V-trace policy: the network and batched inference, on the learner or in an IMPALA actor."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from aioseed.algos import distributions
from aioseed.algos.distributions import Distribution
from aioseed.algos.extras import PREVIOUS_ACTION, state_columns, step_extras
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.networks import Layers, PolicyValue, build_policy_value, policy_head
from aioseed.algos.normalization import RunningNormalizer
from aioseed.algos.recurrent import RecurrentPolicyValue
from aioseed.algos.rewards import clip_rewards
from aioseed.spec import EnvSpec
from aioseed.types import ENV_ACTION

VALUE = "value"
"""Output column of the behaviour's value estimate (kept with ``ImpalaConfig.proximal`` behaviour)."""


def build_network(spec: EnvSpec, config: ImpalaConfig, precision: str = "float32") -> PolicyValue | RecurrentPolicyValue:
    base = build_policy_value(
        spec,
        config.network,
        config.hidden_sizes,
        shared_torso=config.shared_torso or config.lstm_size > 0 or config.previous_action_reward,
        activation=config.activation,
        layers=Layers(config.init, precision),
        policy=policy_head(distributions.for_space(spec.action_space), config.log_std == "state", config.init_log_std),
        normalizer=RunningNormalizer((math.prod(spec.observation_shape),), config.observation_clip) if config.normalize_observations else None,
    )
    return RecurrentPolicyValue(base, config.lstm_size) if config.lstm_size else base


class PolicyModule(tf.Module):
    """The exported policy: ``act(observations, *state[, reward]) -> {action, logits, value, **next_state}``,
    plus ``env_action`` (what the env runs) for Box actions, whose ``action`` is the pre-squash sample and
    ``logits`` the Gaussian's ``[mean, log_std]``.

    Feedforward networks have no state. With an LSTM core the state is ``core_h, core_c``;
    with ``previous_action_reward`` it also holds ``prev_action`` (one-hot), and ``reward``
    is the reward that led to the observation (unclipped; the policy clips it as in training). All are zero at an episode's start. Loadable
    without aioseed.
    """

    def __init__(self, network: PolicyValue | RecurrentPolicyValue, spec: EnvSpec, config: ImpalaConfig) -> None:
        super().__init__(name="aioseed_policy")
        self.network = network
        self.observation_shape = tf.constant(spec.observation_shape, tf.int64)
        self.distribution: Distribution = distributions.for_space(spec.action_space)
        self._reward_clipping = (config.reward_clipping, config.reward_clip)
        shapes = dict(network.state_shapes())
        self.extras = config.previous_action_reward
        if self.extras:
            shapes[PREVIOUS_ACTION] = (self.distribution.feature_size,)
        self.state_names = tuple(shapes)
        signature = [
            tf.TensorSpec([None, *spec.observation_shape], tf.as_dtype(spec.observation_dtype), name="observations"),
            *(tf.TensorSpec([None, *shape], tf.float32, name=name) for name, shape in shapes.items()),
            *([tf.TensorSpec([None], tf.float32, name="reward")] if self.extras else []),
        ]
        self.act = tf.function(self._act, input_signature=signature, jit_compile=config.jit_compile)
        self.greedy = tf.function(self._greedy, input_signature=signature, jit_compile=config.jit_compile)

    def _forward(self, observations: tf.Tensor, inputs: tuple[tf.Tensor, ...]) -> dict[str, tf.Tensor]:
        state = dict(zip(self.state_names, inputs))
        extras = None
        if self.extras:
            extras = step_extras(state.pop(PREVIOUS_ACTION), clip_rewards(inputs[-1], *self._reward_clipping))
        logits, value, next_state = self.network.step(observations, state, extras)
        return {"logits": logits, "value": value, **next_state}

    def _with_action(self, out: dict[str, tf.Tensor], action: tf.Tensor) -> dict[str, tf.Tensor]:
        if self.extras:
            out[PREVIOUS_ACTION] = self.distribution.features(action)
        if isinstance(self.distribution, distributions.TanhGaussian):
            out[ENV_ACTION] = self.distribution.env_action(action)
        return {"action": action, **out}

    def _act(self, observations: tf.Tensor, *inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        out = self._forward(observations, inputs)
        return self._with_action(out, self.distribution.sample(out["logits"]))

    def _greedy(self, observations: tf.Tensor, *inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        out = self._forward(observations, inputs)
        return self._with_action(out, self.distribution.mode(out["logits"]))


class ImpalaPolicy:
    """The network and ``infer``; ``ImpalaAgent`` adds training, and an IMPALA-mode actor runs one on its
    CPU with weights it loads from the learner (``load_policy_variables``)."""

    burn_in = 0
    """Unroll steps that only warm up recurrent state (none: V-trace learns from every step)."""

    def __init__(
        self,
        spec: EnvSpec,
        config: ImpalaConfig,
        inference_device: Callable[[], str] = lambda: "/CPU:0",
        precision: str = "float32",
    ) -> None:
        """Builds the network's variables (in the caller's distribution scope, if any); ``precision``: the
        torso's (``aioseed.algos.networks.Layers``; the weights are float32 either way)."""
        self.spec = spec
        self.config = config
        self._inference_device = inference_device
        self.network = build_network(spec, config, precision)
        self.distribution: Distribution = distributions.for_space(spec.action_space)
        extras = np.zeros((1, self.distribution.feature_size + 1), np.float32) if config.previous_action_reward else None
        core = {name: np.zeros((1, *shape), np.float32) for name, shape in self.network.state_shapes().items()}
        self.network.step(np.zeros((1, *spec.observation_shape), spec.observation_dtype), core, extras)
        self.policy = PolicyModule(self.network, spec, config)
        self._outputs = (*self.output_columns(), ENV_ACTION)
        """What ``infer`` returns of the policy's outputs (those it has)."""

    def output_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        """Each step keeps the action and its logits, and its value where training starts from the behaviour's
        (``ImpalaConfig.proximal``)."""
        columns = {"action": self.distribution.action_column(), "logits": ((self.distribution.params_size,), np.float32)}
        if self.config.proximal == "behaviour":
            columns[VALUE] = ((), np.float32)
        return columns

    def state_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        previous = self.distribution.feature_size if self.config.previous_action_reward else None
        return state_columns(self.network.state_shapes(), previous)

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """``rewards``: <float32>[B] the reward that led to each row, zero where an episode starts."""
        inputs = [state[name] for name in self.policy.state_names]
        if self.config.previous_action_reward:
            inputs.append(np.zeros(len(observations), np.float32) if rewards is None else np.asarray(rewards, np.float32))
        with tf.device(self._inference_device()):
            out = self.policy.act(observations, *inputs)
        outputs = {name: out[name].numpy() for name in self._outputs if name in out}
        return outputs, {name: out[name].numpy() for name in self.policy.state_names}

    def policy_variables(self) -> list[tf.Variable]:
        """The network's variables, in the same order in every process that builds this network."""
        return list(self.network.variables)

    def variable_specs(self) -> list[tuple[tuple[int, ...], str]]:
        """(shape, NumPy dtype name) of each of ``policy_variables``."""
        return [(tuple(v.shape), np.dtype(getattr(v.dtype, "as_numpy_dtype", v.dtype)).name) for v in self.policy_variables()]

    def load_policy_variables(self, arrays: Sequence[np.ndarray]) -> None:
        """Sets the weights (an IMPALA actor, between steps); the shapes must be the network's."""
        variables = self.policy_variables()
        if len(arrays) != len(variables):
            raise ValueError(f"got {len(arrays)} tensors for a network of {len(variables)} variables")
        for variable, array in zip(variables, arrays):
            if tuple(array.shape) != tuple(variable.shape):
                raise ValueError(f"tensor of shape {array.shape} for variable {variable.name} of shape {tuple(variable.shape)}")
            variable.assign(array)
