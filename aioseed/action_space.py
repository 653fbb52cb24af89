"""The action spaces aioseed serves, as actors declare them and as actions travel on the wire.

Three kinds, each with its wire layout (``Actions.actions``, K rows):

- ``Discrete(n)``: <i4>[K], actions 0..n-1 (what every actor sent before the others existed);
- ``MultiDiscrete(nvec)``: <i4>[K, len(nvec)], independent categoricals, action i in 0..nvec[i]-1;
- ``Box(shape, low, high)``: <f4>[K, *shape], finite and inside ``[low, high]`` element by element.

The learner never sends a non-finite action or one outside the box: ``clip`` clips and counts the
rows it had to clip; a row with a non-finite action is invalid (its stream gets an error, not an action).
"""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np

from aioseed.proto import aioseed_pb2 as pb


def _echo_dims(dims: tuple[int, ...], limit: int = 8) -> str:
    text = ",".join(str(d) for d in dims[:limit])
    return f"[{text}]" if len(dims) <= limit else f"[{text},... {len(dims)} dims]"


@dataclasses.dataclass(frozen=True)
class Discrete:
    """Actions 0..n-1."""

    n: int

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError(f"a Discrete action space needs n > 0, got {self.n}")

    @property
    def row_shape(self) -> tuple[int, ...]:
        return ()

    @property
    def wire_dtype(self) -> np.dtype:
        return np.dtype("<i4")

    def describe(self) -> str:
        return f"{self.n} actions"


@dataclasses.dataclass(frozen=True)
class MultiDiscrete:
    """One action per categorical i, in 0..nvec[i]-1."""

    nvec: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.nvec or any(n <= 0 for n in self.nvec):
            raise ValueError(f"a MultiDiscrete action space needs sizes > 0, got {_echo_dims(self.nvec)}")

    @property
    def row_shape(self) -> tuple[int, ...]:
        return (len(self.nvec),)

    @property
    def wire_dtype(self) -> np.dtype:
        return np.dtype("<i4")

    def describe(self) -> str:
        return f"MultiDiscrete{_echo_dims(self.nvec)} actions"


LOG_STD_MIN = -5.0
"""A Box policy's log standard deviations lie in [LOG_STD_MIN, LOG_STD_MAX] (CleanRL's SAC bounds): its heads clip or
squash them there, and an IMPALA-mode upload outside is refused."""
LOG_STD_MAX = 2.0
MAX_ABS_PRESQUASH = 10.0
"""A Box action is ``tanh`` of a Gaussian's pre-squash sample ``u``, which is +-1 in float32 beyond |u| ~ 9: an uploaded
``u`` beyond this bound is clipped to it (the env action is the same, and the log-densities stay finite)."""


@dataclasses.dataclass(frozen=True)
class Box:
    """float32 actions of ``shape``, element i in ``[low[i], high[i]]`` (bounds flattened in C order)."""

    shape: tuple[int, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]

    def __post_init__(self) -> None:
        size = math.prod(self.shape)
        if not self.shape or any(d <= 0 for d in self.shape):
            raise ValueError(f"a Box action space needs a shape of positive sizes, got {_echo_dims(self.shape)}")
        if len(self.low) != size or len(self.high) != size:
            raise ValueError(f"a Box of shape {_echo_dims(self.shape)} needs {size} low and high bounds")
        low, high = np.asarray(self.low, np.float64), np.asarray(self.high, np.float64)
        with np.errstate(over="ignore", invalid="ignore"):  # the width in float32, as the policies scale actions
            width = high.astype(np.float32) - low.astype(np.float32)
        if not (np.isfinite(low).all() and np.isfinite(high).all() and np.isfinite(width).all()):
            raise ValueError(
                "aioseed's continuous policies squash their actions into a bounded box, and this Box has infinite "
                "bounds (or a width past float32's range): declare the range the env accepts, with a gymnasium.ActionWrapper "
                "that sets a finite action_space"
            )
        if not (low < high).all():
            raise ValueError("a Box action space needs low < high in every element")

    @property
    def row_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def size(self) -> int:
        """Elements of one action."""
        return math.prod(self.shape)

    @property
    def wire_dtype(self) -> np.dtype:
        return np.dtype("<f4")

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(low, high), <float32>[*shape] each."""
        return (np.asarray(self.low, np.float32).reshape(self.shape), np.asarray(self.high, np.float32).reshape(self.shape))

    def describe(self) -> str:
        """``Box[3] actions in [-1, 1]``; bounds that differ between elements are listed (up to 4)."""
        if len(set(self.low)) == 1 and len(set(self.high)) == 1:
            return f"Box{_echo_dims(self.shape)} actions in [{self.low[0]:g}, {self.high[0]:g}]"
        pairs = " x ".join(f"[{low:g}, {high:g}]" for low, high in list(zip(self.low, self.high))[:4])
        return f"Box{_echo_dims(self.shape)} actions in {pairs}{' x ...' if self.size > 4 else ''}"


ActionSpace = Discrete | MultiDiscrete | Box


def from_gym(space: gym.Space) -> ActionSpace:
    """The action space of a gymnasium env; anything else is a TypeError that names the space."""
    if isinstance(space, gym.spaces.Discrete):
        if int(space.start) != 0:
            raise TypeError(f"aioseed sends actions 0..n-1, this env's {space} starts at {space.start}")
        return Discrete(int(space.n))
    if isinstance(space, gym.spaces.MultiDiscrete):
        if np.any(space.start != 0):
            raise TypeError(f"aioseed sends MultiDiscrete actions from 0, this env's {space} starts elsewhere")
        if space.nvec.ndim != 1:
            raise TypeError(f"aioseed serves one-dimensional MultiDiscrete actions, this env has {space}")
        return MultiDiscrete(tuple(int(n) for n in space.nvec))
    if isinstance(space, gym.spaces.Box):
        if not np.issubdtype(space.dtype, np.floating):
            raise TypeError(f"aioseed serves float Box actions, this env has {space}")
        # Bounds as float32, the wire's precision: an actor's spec and the learner's then compare equal.
        low, high = (tuple(np.asarray(b, np.float32).ravel().tolist()) for b in (space.low, space.high))
        try:
            return Box(tuple(int(d) for d in space.shape), low, high)
        except ValueError as exc:
            raise TypeError(f"{exc} (this env has {space})") from None
    raise TypeError(f"aioseed serves Discrete, MultiDiscrete and Box action spaces, this env has {space}")


def to_proto(space: ActionSpace, message: pb.EnvSpec) -> None:
    """Sets ``message``'s action-space fields."""
    if isinstance(space, Discrete):
        message.num_actions = space.n
    elif isinstance(space, MultiDiscrete):
        message.action_nvec.extend(space.nvec)
    else:
        message.action_box.CopyFrom(pb.BoxSpace(shape=list(space.shape), low=list(space.low), high=list(space.high)))


def from_proto(message: pb.EnvSpec) -> ActionSpace:
    """The action space ``message`` declares; ValueError unless exactly one kind is set, and valid."""
    kinds = (message.num_actions != 0) + bool(message.action_nvec) + message.HasField("action_box")
    if kinds != 1:
        raise ValueError("an env spec declares exactly one action space: num_actions, action_box or action_nvec")
    if message.num_actions:
        return Discrete(message.num_actions)
    if message.action_nvec:
        return MultiDiscrete(tuple(message.action_nvec))
    box = message.action_box
    return Box(tuple(box.shape), tuple(box.low), tuple(box.high))


def invalid_actions(space: ActionSpace, actions: np.ndarray) -> np.ndarray:
    """<bool>[B] rows of ``[B, *row_shape]`` actions that cannot be sent: an index out of range, or a
    non-finite element (a Box's out-of-bounds elements are clipped by ``clip``, not refused)."""
    rows = actions.reshape(len(actions), -1)
    if isinstance(space, Discrete):
        return (rows[:, 0] < 0) | (rows[:, 0] >= space.n)
    if isinstance(space, MultiDiscrete):
        return ((rows < 0) | (rows >= np.asarray(space.nvec))).any(axis=1)
    return ~np.isfinite(rows).all(axis=1)


def clip(space: ActionSpace, actions: np.ndarray) -> tuple[np.ndarray, int]:
    """Valid ``[K, *row_shape]`` actions as sent, and how many rows had to be clipped into a Box (rounding at
    the edges of a squashed action, or a policy that does not squash); other spaces pass unchanged."""
    if not isinstance(space, Box):
        return actions, 0
    low, high = space.bounds()
    values = np.asarray(actions, np.float32).reshape(len(actions), *space.shape)
    clipped = np.clip(values, low, high)
    changed = int((clipped != values).reshape(len(values), -1).any(axis=1).sum())
    return clipped, changed


def encode(space: ActionSpace, actions: np.ndarray) -> bytes:
    """``[K, *row_shape]`` actions (valid, and clipped) -> ``Actions.actions``."""
    return np.ascontiguousarray(actions, space.wire_dtype).tobytes()


def decode(space: ActionSpace, data: bytes, rows: int) -> np.ndarray:
    """The actor's side: ``Actions.actions`` for ``rows`` envs -> ``[rows, *row_shape]``; ValueError when the
    size is wrong, an index is out of range or a Box action is non-finite or outside the box."""
    dtype = space.wire_dtype
    expected = rows * math.prod(space.row_shape) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(f"got {len(data)} bytes of actions for {rows} envs of {space.describe()}, expected {expected}")
    actions = np.frombuffer(data, dtype).reshape(rows, *space.row_shape)
    if invalid_actions(space, actions).any():
        raise ValueError(f"the learner sent an action outside {space.describe()}")
    if isinstance(space, Box):
        low, high = space.bounds()
        if ((actions < low) | (actions > high)).any():
            raise ValueError(f"the learner sent an action outside {space.describe()}")
    return actions


def for_env(space: ActionSpace, actions: np.ndarray) -> np.ndarray:
    """``[K, *row_shape]`` actions as a gymnasium vector env takes them: int64 indices, or float32 boxes."""
    if isinstance(space, Box):
        return np.asarray(actions, np.float32).reshape(len(actions), *space.shape)
    return np.asarray(actions).astype(np.int64)
