"""Anakin's loop: T steps of acting and stepping B TensorFlow envs, then one V-trace update, as one
``tf.function``. Python runs once per iteration (B x T env steps), never per step.

The rollout has the learner's unroll layout (``aioseed.types.Step``): row t holds the observation,
the action and logits chosen there, the reward that led to it and whether the transition into it
crossed an episode end. Consecutive rollouts overlap by one row, as SEED's unrolls do. The rollout
then trains in batches of ``batch_size`` envs' unrolls, one ``ImpalaAgent.update`` each (the same
compiled step the learner runs): stepping many envs at once is what makes Anakin fast, and
updates of the learner's batch size keep its learning per frame (one update on all 256 envs
of CartPole learned several times slower per frame). The policy lag is at most
``envs / batch_size - 1`` updates, which V-trace corrects.

Truncation (CartPole's 500 steps): the rollout has no room for the final observation SEED's actors
send as a phantom row, so the step that truncates an episode learns ``reward + discount * V(final
observation)`` as a terminal step, V from the acting network (the partial-episode bootstrap of Pardo
et al. 2018). Treating the time limit as termination instead made a policy that reached 500 swing
back and, in 1 of 4 seeds, collapse to a return of 9 (values of states the policy keeps balancing
were pulled towards 0 at random times). The returns reported are the env's.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np
import tensorflow as tf

from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.anakin.envs import TFEnv, step


class Anakin:
    """Verbs: ``iterate`` (one compiled act-step-learn pass), ``mean_return`` over the recent episodes."""

    def __init__(
        self,
        env: TFEnv,
        agent: ImpalaAgent,
        envs: int,
        unroll_length: int,
        batch_size: int,
        seed: int | None = None,
        window: int = 100,
    ) -> None:
        """Each iteration steps ``envs`` envs ``unroll_length`` times, then updates on ``batch_size`` envs'
        unrolls at a time (``envs / batch_size`` updates, in order, as the learner's batches are). ``seed``:
        of the actions' and the envs' random streams (None: drawn, so that unseeded runs differ)."""
        if envs % batch_size:
            raise ValueError(f"envs = {envs} must be a multiple of training.batch_size = {batch_size}")
        if agent.state_columns():
            raise ValueError("Anakin runs feedforward policies (no LSTM core, no previous action/reward input)")
        if env.truncates and agent.config.reward_clipping != "none":
            raise ValueError("Anakin adds a truncated episode's bootstrap value to its last reward: reward clipping would clip it")
        if agent.config.normalize_observations or agent.config.scale_rewards:
            raise ValueError("Anakin updates the network in its own loop: normalize_observations and scale_rewards are for the learner")
        if agent.config.reuses_samples or agent.config.targets != "vtrace":
            raise ValueError(
                "Anakin makes one V-trace update per batch: epochs, minibatches, ppo_clip and targets gae "
                "(PPO-style sample reuse) are for the learner (--architecture seed)"
            )
        self.env, self.agent = env, agent
        self.envs, self.unroll_length, self.batch_size = envs, unroll_length, batch_size
        seed = secrets.randbits(31) if seed is None else seed
        self._seed = tf.constant([seed, 0], tf.int64)
        """Step n's actions draw from [seed, n], its envs from [seed, -n]: no stream repeats another's, nor another seed's."""
        self._counter = tf.Variable(1, dtype=tf.int64, trainable=False)
        state = env.reset(envs, self._next_seed_eager())
        self._state = {name: tf.Variable(value, trainable=False) for name, value in state.items()}
        self._reward = tf.Variable(tf.zeros([envs]), trainable=False)
        self._done = tf.Variable(tf.zeros([envs], tf.bool), trainable=False)
        self._episode_return = tf.Variable(tf.zeros([envs]), trainable=False)
        self._recent = tf.Variable(tf.fill([window], np.nan), trainable=False)
        self._episodes = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.iterate = tf.function(self._iterate)

    def _next_seed_eager(self) -> tf.Tensor:
        seed = self._seed + tf.stack([tf.constant(0, tf.int64), self._counter])
        self._counter.assign_add(1)
        return seed

    @property
    def frames_per_iteration(self) -> int:
        return self.envs * self.unroll_length

    @property
    def updates_per_iteration(self) -> int:
        return self.envs // self.batch_size

    @property
    def episodes(self) -> int:
        return int(self._episodes.numpy())

    def mean_return(self) -> float:
        """Mean return of the last ``window`` episodes (NaN before the first ends)."""
        recent = self._recent.numpy()
        return float(np.nanmean(recent)) if np.isfinite(recent).any() else float("nan")

    def _iterate(self) -> dict[str, tf.Tensor]:
        rollout, episodes = self.act()

        def part(start: tf.Tensor | int) -> dict[str, tf.Tensor]:
            return {name: value[:, start : start + self.batch_size] for name, value in rollout.items()}

        # In order, each update on the policy the last one made; the first outside the loop gives the
        # metrics their structure (a graph loop, not one traced update per batch: it compiles in seconds).
        metrics = self.agent.update(part(0))
        for start in tf.range(self.batch_size, self.envs, self.batch_size):
            metrics = self.agent.update(part(start))
        return {**metrics, "episodes": episodes}

    def act(self) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
        """Steps the envs ``unroll_length`` times on the current policy: (the rollout in the learner's
        unroll layout, [T + 1, B, ...], the number of episodes that ended)."""
        env, t_max = self.env, self.unroll_length
        state = {name: variable.read_value() for name, variable in self._state.items()}
        observations = tf.TensorArray(tf.as_dtype(env.observation_dtype), t_max + 1)
        actions = tf.TensorArray(tf.int32, t_max + 1)
        logits_out = tf.TensorArray(tf.float32, t_max + 1)
        rewards = tf.TensorArray(tf.float32, t_max + 1).write(0, self._reward.read_value())
        dones = tf.TensorArray(tf.bool, t_max + 1).write(0, self._done.read_value())
        episode_return = self._episode_return.read_value()
        ended_returns = tf.TensorArray(tf.float32, 0, dynamic_size=True, infer_shape=False)
        ended_count = tf.constant(0)
        for t in tf.range(t_max):
            seed = self._seed + tf.stack([tf.constant(0, tf.int64), self._counter.assign_add(1)])
            observation = env.observe(state)
            logits, _, _ = self.agent.network.step(observation, {}, None)
            action = tf.random.stateless_categorical(logits, 1, seed, dtype=tf.int32)[:, 0]
            state, reward, terminated, truncated, final = step(env, state, action, seed * [1, -1])
            ended = terminated | truncated
            episode_return += reward
            reward += self._bootstrap(final, truncated)
            ended_returns = ended_returns.write(t, tf.boolean_mask(episode_return, ended))
            ended_count += tf.reduce_sum(tf.cast(ended, tf.int32))
            episode_return = tf.where(ended, 0.0, episode_return)
            observations = observations.write(t, observation)
            actions = actions.write(t, action)
            logits_out = logits_out.write(t, logits)
            rewards = rewards.write(t + 1, reward)
            dones = dones.write(t + 1, ended)
        # Row T: the next rollout's row 0; its action is chosen there (not used by the loss here).
        observations = observations.write(t_max, env.observe(state))
        actions = actions.write(t_max, tf.zeros([self.envs], tf.int32))
        logits_out = logits_out.write(t_max, tf.zeros([self.envs, env.num_actions]))
        rollout = {
            "observation": observations.stack(),
            "action": actions.stack(),
            "logits": logits_out.stack(),
            "reward": rewards.stack(),
            "done": dones.stack(),
            "phantom": tf.zeros([t_max + 1, self.envs], tf.bool),
        }
        for name, variable in self._state.items():
            variable.assign(state[name])
        self._reward.assign(rollout["reward"][-1])
        self._done.assign(rollout["done"][-1])
        self._episode_return.assign(episode_return)
        self._record(ended_returns.concat())
        return rollout, tf.cast(ended_count, tf.float32)

    def _bootstrap(self, final: dict[str, tf.Tensor], truncated: tf.Tensor) -> tf.Tensor:
        """``discount * V(final observation)`` where the episode was truncated, else 0 (no forward pass
        when no env truncated)."""

        def values() -> tf.Tensor:
            _, value, _ = self.agent.network.step(self.env.observe(final), {}, None)
            return tf.where(truncated, self.agent.config.discount * value, 0.0)

        return tf.cond(tf.reduce_any(truncated), values, lambda: tf.zeros_like(truncated, tf.float32))

    def _record(self, returns: tf.Tensor) -> None:
        """Puts the episodes that ended into the ring of recent returns."""
        window = tf.shape(self._recent, out_type=tf.int64)[0]
        count = tf.shape(returns, out_type=tf.int64)[0]
        keep = tf.minimum(count, window)
        latest = returns[count - keep :]
        positions = (self._episodes + count - keep + tf.range(keep)) % window
        self._recent.scatter_nd_update(positions[:, None], latest)
        self._episodes.assign_add(count)

    def checkpoint_objects(self) -> dict[str, Any]:
        return self.agent.checkpoint_objects()
