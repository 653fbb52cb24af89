"""The environment spec that actors declare and the learner checks."""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np

from aioseed import action_space as spaces
from aioseed.action_space import ActionSpace, Discrete
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
    action_space: ActionSpace
    """Discrete, MultiDiscrete or Box (``aioseed.action_space``); an int n is read as Discrete(n)."""
    frames_per_step: int = 1
    """Emulator frames per env step (Atari's frame skip); frame counters count these."""
    players: tuple[int, int] = (1, 0)
    """(left, right) controlled players of one env (Football): the env steps once with all of their actions
    and gives one row per player, left side first. (1, 0): one row per env."""

    def __post_init__(self) -> None:
        if any(d <= 0 for d in self.observation_shape):
            raise ValueError(f"observation_shape must be positive, got {echo_shape(self.observation_shape)}")
        try:
            dtype = np.dtype(self.observation_dtype)
        except Exception as exc:  # NumPy raises TypeError, SyntaxError, ... for names it cannot parse
            raise ValueError(f"observation_dtype {echo(self.observation_dtype)} is not a NumPy dtype") from exc
        if dtype.kind not in "biuf" or dtype.shape or dtype.names:
            raise ValueError(f"observation_dtype must be a plain bool/int/float dtype, got {echo(self.observation_dtype)}")
        if isinstance(self.action_space, int):
            object.__setattr__(self, "action_space", Discrete(self.action_space))
        if self.frames_per_step < 1:
            raise ValueError(f"frames_per_step must be positive, got {self.frames_per_step}")
        left, right = self.players
        if left < 1 or right < 0:
            raise ValueError(f"players must be (left >= 1, right >= 0), got ({left}, {right})")

    @property
    def rows_per_env(self) -> int:
        """Rows one env step gives: its controlled players."""
        return self.players[0] + self.players[1]

    def right_side(self, rows: int) -> np.ndarray | None:
        """<bool>[rows] which of a stream's rows (whole games, in order) are right-side players; None: no such rows."""
        left, right = self.players
        return None if right == 0 else np.arange(rows) % (left + right) >= left

    @property
    def num_actions(self) -> int:
        """The size of a Discrete action space; a TypeError that names the space for the others."""
        if not isinstance(self.action_space, Discrete):
            raise TypeError(f"this needs a Discrete action space; the env has {self.action_space.describe()}")
        return self.action_space.n

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.observation_dtype)

    @property
    def observation_nbytes(self) -> int:
        """Bytes of one observation on the wire."""
        return math.prod(self.observation_shape) * self.dtype.itemsize

    @classmethod
    def from_spaces(
        cls, observation_space: gym.Space, action_space: gym.Space, frames_per_step: int = 1, players: tuple[int, int] = (1, 0)
    ) -> EnvSpec:
        if not isinstance(observation_space, gym.spaces.Box):
            raise TypeError(
                f"aioseed serves Box observations (Dict, Tuple and discrete ones flattened), this env has {observation_space}"
            )
        return cls(
            observation_shape=tuple(int(d) for d in observation_space.shape),
            observation_dtype=np.dtype(observation_space.dtype).name,
            action_space=spaces.from_gym(action_space),
            frames_per_step=frames_per_step,
            players=players,
        )

    def to_proto(self) -> pb.EnvSpec:
        message = pb.EnvSpec(
            observation_shape=list(self.observation_shape),
            observation_dtype=self.observation_dtype,
            frames_per_step=self.frames_per_step,
        )
        if self.players != (1, 0):
            message.left_players, message.right_players = self.players
        spaces.to_proto(self.action_space, message)
        return message

    @classmethod
    def from_proto(cls, message: pb.EnvSpec) -> EnvSpec:
        """ValueError for a spec no env can have (both action spaces, none, a negative size...)."""
        return cls(
            observation_shape=tuple(message.observation_shape),
            observation_dtype=message.observation_dtype,
            action_space=spaces.from_proto(message),
            frames_per_step=message.frames_per_step or 1,
            players=(message.left_players, message.right_players) if message.left_players or message.right_players else (1, 0),
        )

    def describe(self) -> str:
        """Short even for a client's outlandish spec (dtype name and shape are cut)."""
        dtype = self.observation_dtype if len(self.observation_dtype) <= MAX_ECHO_CHARS else echo(self.observation_dtype)
        skip = f", {self.frames_per_step} frames/step" if self.frames_per_step > 1 else ""
        players = f", {self.players[0]} left + {self.players[1]} right players/env" if self.players != (1, 0) else ""
        return f"obs {dtype}{echo_shape(self.observation_shape)}, {self.action_space.describe()}{skip}{players}"
