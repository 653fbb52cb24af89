"""The environment spec that actors declare and the learner checks."""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np

from aioseed.proto import aioseed_pb2 as pb

MAX_ECHO_CHARS = 40
"""Longest client-given value (a dtype name, a shape) an error message repeats."""


def echo(value: object, limit: int = MAX_ECHO_CHARS) -> str:
    """``repr(value)``, cut to ``limit`` characters: error details must stay small whatever a client sends."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def echo_shape(shape: tuple[int, ...], limit: int = 8) -> str:
    """``[84,84,4]``; past ``limit`` dimensions, the first ones and the count."""
    dims = ",".join(str(d) for d in shape[:limit])
    return f"[{dims}]" if len(shape) <= limit else f"[{dims},... {len(shape)} dims]"


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """What one environment's observations and actions look like."""

    observation_shape: tuple[int, ...]
    """Shape of one observation, without the batch dimension."""
    observation_dtype: str
    """NumPy dtype name of the observation elements, e.g. "float32"."""
    num_actions: int
    """Size of the Discrete action space."""
    frames_per_step: int = 1
    """Emulator frames per env step (Atari's frame skip); frame counters count these."""

    def __post_init__(self) -> None:
        if any(d <= 0 for d in self.observation_shape):
            raise ValueError(f"observation_shape must be positive, got {echo_shape(self.observation_shape)}")
        try:
            dtype = np.dtype(self.observation_dtype)
        except Exception as exc:  # NumPy raises TypeError, SyntaxError, ... for names it cannot parse
            raise ValueError(f"observation_dtype {echo(self.observation_dtype)} is not a NumPy dtype") from exc
        if dtype.kind not in "biuf" or dtype.shape or dtype.names:
            raise ValueError(f"observation_dtype must be a plain bool/int/float dtype, got {echo(self.observation_dtype)}")
        if self.num_actions <= 0:
            raise ValueError(f"num_actions must be positive, got {self.num_actions}")
        if self.frames_per_step < 1:
            raise ValueError(f"frames_per_step must be positive, got {self.frames_per_step}")

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.observation_dtype)

    @property
    def observation_nbytes(self) -> int:
        """Bytes of one observation on the wire."""
        return math.prod(self.observation_shape) * self.dtype.itemsize

    @classmethod
    def from_spaces(cls, observation_space: gym.Space, action_space: gym.Space, frames_per_step: int = 1) -> EnvSpec:
        if not isinstance(observation_space, gym.spaces.Box):
            raise TypeError(
                f"aioseed serves Box observations, this env has {observation_space} (a Dict, Tuple or Discrete "
                "space becomes a Box with gymnasium.wrappers.FlattenObservation)"
            )
        if not isinstance(action_space, gym.spaces.Discrete):
            raise TypeError(f"aioseed's agents (V-trace, R2D2) act in a Discrete action space, this env has {action_space}")
        if int(action_space.start) != 0:
            raise TypeError(f"aioseed sends actions 0..n-1, this env's {action_space} starts at {action_space.start}")
        return cls(
            observation_shape=tuple(int(d) for d in observation_space.shape),
            observation_dtype=np.dtype(observation_space.dtype).name,
            num_actions=int(action_space.n),
            frames_per_step=frames_per_step,
        )

    def to_proto(self) -> pb.EnvSpec:
        return pb.EnvSpec(
            observation_shape=list(self.observation_shape),
            observation_dtype=self.observation_dtype,
            num_actions=self.num_actions,
            frames_per_step=self.frames_per_step,
        )

    @classmethod
    def from_proto(cls, message: pb.EnvSpec) -> EnvSpec:
        return cls(
            observation_shape=tuple(message.observation_shape),
            observation_dtype=message.observation_dtype,
            num_actions=message.num_actions,
            frames_per_step=message.frames_per_step or 1,
        )

    def describe(self) -> str:
        """Short even for a client's outlandish spec (dtype name and shape are cut)."""
        dtype = self.observation_dtype if len(self.observation_dtype) <= MAX_ECHO_CHARS else echo(self.observation_dtype)
        skip = f", {self.frames_per_step} frames/step" if self.frames_per_step > 1 else ""
        return f"obs {dtype}{echo_shape(self.observation_shape)}, {self.num_actions} actions{skip}"
