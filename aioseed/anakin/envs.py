"""Environments as pure TensorFlow ops over a batch: CartPole (gymnasium's dynamics, step for step)
and Catch (``aioseed/Catch-v0``'s rules and frames).

An env is a few functions of an explicit state (a dict of tensors): ``reset`` makes ``batch`` fresh
states, ``observe`` draws them, and ``transition`` applies ``<int32>[B]`` actions. ``step`` then resets
the envs whose episode ended, as gymnasium's autoreset does, so that a rollout never leaves the graph;
it also returns the states the episodes ended in (a truncated episode's value is bootstrapped from there).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
import tensorflow as tf

State = dict[str, tf.Tensor]
Transition = tuple[State, tf.Tensor, tf.Tensor, tf.Tensor]


class TFEnv(Protocol):
    observation_shape: tuple[int, ...]
    observation_dtype: str
    num_actions: int
    truncates: bool
    """Whether episodes can end on a time limit (then the learner bootstraps from their last state)."""

    def reset(self, batch: int, seed: tf.Tensor) -> State:
        """``batch`` fresh episodes; ``seed``: <int32>[2] a stateless random seed."""
        ...

    def observe(self, state: State) -> tf.Tensor:
        """<observation_dtype>[B, *observation_shape]."""
        ...

    def transition(self, state: State, action: tf.Tensor) -> Transition:
        """(next state, <float32>[B] reward, <bool>[B] terminated, <bool>[B] truncated); no reset."""
        ...


def step(env: TFEnv, state: State, action: tf.Tensor, seed: tf.Tensor) -> tuple[State, tf.Tensor, tf.Tensor, tf.Tensor, State]:
    """``env.transition``, then the ended envs reset from ``seed``: (next state, reward, terminated,
    truncated, the states before the reset)."""
    moved, reward, terminated, truncated = env.transition(state, action)
    ended = terminated | truncated
    fresh = env.reset(tf.shape(ended)[0], seed)

    def pick(name: str) -> tf.Tensor:
        mask = tf.reshape(ended, [-1] + [1] * (len(moved[name].shape) - 1))
        return tf.where(mask, fresh[name], moved[name])

    return {name: pick(name) for name in moved}, reward, terminated, truncated, moved


class CartPole:
    """gymnasium's CartPole-v1: Euler steps of the cart-pole ODE in float64, as gymnasium computes them,
    observations in float32; termination past 2.4 m or 12 degrees, truncation at ``max_steps``."""

    observation_shape = (4,)
    observation_dtype = "float32"
    num_actions = 2
    truncates = True
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    x_threshold, theta_threshold = 2.4, 12 * 2 * math.pi / 360

    def __init__(self, max_steps: int = 500) -> None:
        self.max_steps = max_steps

    def reset(self, batch: int, seed: tf.Tensor) -> State:
        physics = tf.random.stateless_uniform([batch, 4], seed, -0.05, 0.05, dtype=tf.float64)
        return {"physics": physics, "steps": tf.zeros([batch], tf.int32)}

    def observe(self, state: State) -> tf.Tensor:
        return tf.cast(state["physics"], tf.float32)

    def dynamics(self, physics: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
        """<float64>[B, 4] (x, x_dot, theta, theta_dot) after one Euler step under ``action`` (<int32>[B])."""
        x, x_dot, theta, theta_dot = tf.unstack(physics, axis=-1)
        total_mass = self.masspole + self.masscart
        polemass_length = self.masspole * self.length
        force = tf.where(action == 1, self.force_mag, -self.force_mag)
        force = tf.cast(force, tf.float64)
        costheta, sintheta = tf.cos(theta), tf.sin(theta)
        temp = (force + polemass_length * tf.square(theta_dot) * sintheta) / total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * tf.square(costheta) / total_mass)
        )
        xacc = temp - polemass_length * thetaacc * costheta / total_mass
        return tf.stack(
            [x + self.tau * x_dot, x_dot + self.tau * xacc, theta + self.tau * theta_dot, theta_dot + self.tau * thetaacc],
            axis=-1,
        )

    def transition(self, state: State, action: tf.Tensor) -> Transition:
        physics = self.dynamics(state["physics"], action)
        x, theta = physics[:, 0], physics[:, 2]
        terminated = (tf.abs(x) > self.x_threshold) | (tf.abs(theta) > self.theta_threshold)
        steps = state["steps"] + 1
        truncated = ~terminated & (steps >= self.max_steps)
        reward = tf.ones_like(x, tf.float32)  # gymnasium pays 1 on the terminating step too
        return {"physics": physics, "steps": steps}, reward, terminated, truncated


class Catch:
    """``aioseed/Catch-v0`` (bsuite's Catch drawn as an 84x84 frame): the ball falls one row per step,
    the paddle moves left/stay/right, +1 or -1 when the ball reaches the bottom row."""

    observation_dtype = "uint8"
    num_actions = 3
    truncates = False

    def __init__(self, rows: int = 10, columns: int = 5, size: int = 84) -> None:
        self.rows, self.columns, self.size = rows, columns, size
        self.observation_shape = (1, size, size)
        # Pixel -> grid cell, from the same cell edges as envs/catch.py draws.
        pixels = np.arange(size)
        cell = lambda n: np.searchsorted(np.linspace(0, size, n + 1).astype(int), pixels, side="right") - 1  # noqa: E731
        self._pixel_row = tf.constant(cell(rows), tf.int32)
        self._pixel_column = tf.constant(cell(columns), tf.int32)

    def reset(self, batch: int, seed: tf.Tensor) -> State:
        column = tf.random.stateless_uniform([batch], seed, 0, self.columns, dtype=tf.int32)
        return {"ball_row": tf.zeros([batch], tf.int32), "ball_column": column, "paddle": tf.fill([batch], self.columns // 2)}

    def observe(self, state: State) -> tf.Tensor:
        rows = self._pixel_row[None, :, None]
        columns = self._pixel_column[None, None, :]

        def cell(row: tf.Tensor, column: tf.Tensor) -> tf.Tensor:
            return (rows == row[:, None, None]) & (columns == column[:, None, None])

        bottom = tf.fill(tf.shape(state["paddle"]), self.rows - 1)
        lit = cell(state["ball_row"], state["ball_column"]) | cell(bottom, state["paddle"])
        return tf.cast(lit, tf.uint8)[:, None] * 255

    def transition(self, state: State, action: tf.Tensor) -> Transition:
        paddle = tf.clip_by_value(state["paddle"] + action - 1, 0, self.columns - 1)
        ball_row = state["ball_row"] + 1
        terminated = ball_row == self.rows - 1
        caught = tf.where(state["ball_column"] == paddle, 1.0, -1.0)
        reward = tf.where(terminated, caught, 0.0)
        moved = {"ball_row": ball_row, "ball_column": state["ball_column"], "paddle": paddle}
        return moved, reward, terminated, tf.zeros_like(terminated)


ENVS = {"CartPole-v1": CartPole, "aioseed/Catch-v0": Catch}
"""The gymnasium ids that have a TensorFlow twin here."""
