"""What the rest of aioseed needs from an algorithm, as plain data and factories: the contract each
``aioseed/algos/<name>/builder.py`` publishes and ``aioseed.algos.registry`` holds.

The composition root, evaluation, serving, Anakin and the benches read an ``Algorithm`` and never name one
(an architecture test keeps it so). Importing a builder loads no TensorFlow: the agent factory imports its
agent when it is called, so that config checks and the CLI stay light.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from aioseed.action_space import ActionSpace
from aioseed.algos.live import LiveSetting

if TYPE_CHECKING:
    from aioseed.algos.agent import Agent

PacedActing = Literal["bounded", "synchronous", "replay"]
"""Acting modes beyond ``async`` that an algorithm's training can pace (``--training.acting``)."""


@dataclasses.dataclass(frozen=True)
class ReplaySettings:
    """A replay-trained algorithm's replay: its size, sampling and what acting waits for."""

    capacity: int
    """Unrolls kept."""
    priority_exponent: float
    """Prioritisation (0: uniform)."""
    importance_exponent: float
    """Importance-weight correction of the prioritised sampling (0: none)."""
    min_size: int
    """Unrolls inserted before training starts."""
    ratio: float
    """Average times each unroll is sampled."""
    checkpoint: bool
    """Whether checkpoints keep the replay."""
    acting_ahead: float = 0.0
    """Unrolls acting may run ahead of the replay's pace once it has its minimum (``--training.acting replay``)."""


@dataclasses.dataclass(frozen=True)
class Split:
    """How one train batch splits into updates: ``minibatches`` equal parts of ``rows`` (``what`` they are, for errors)."""

    minibatches: int
    rows: int
    what: str

    def fits(self, devices: int) -> bool:
        """Whether the rows split into equal minibatches, each (when there are several) a multiple of ``devices``."""
        return not (self.rows % self.minibatches or (self.minibatches > 1 and (self.rows // self.minibatches) % devices))


def one_update(settings: Any, batch_size: int, unroll_length: int) -> Split:
    """A whole batch per update."""
    return Split(1, batch_size, f"training.batch_size = {batch_size}")


def as_trained(settings: Any, greedy: bool, epsilon: float) -> Any:
    """Evaluation acts as training does (the agent's own inference for evaluation rows)."""
    return settings


def sampled(settings: Any, greedy: bool) -> str:
    return "greedy" if greedy else "sampled"


def nothing_more(settings: Any) -> dict[str, Any]:
    return {}


def never_refused(old: Any, new: Any) -> str | None:
    return None


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """One learning algorithm, as the system composes, evaluates and serves it."""

    name: str
    """``--agent NAME``."""
    section: str | None
    """The learner config's field that holds its settings (its ``--SECTION.*`` flags); None: a plug-in's, whose
    settings are ``default_settings()``."""
    make_agent: Callable[..., Agent]
    """``make_agent(settings, spec, replicas, seed=, precision=, sides=)``: the agent for the spec the policy sees,
    training on ``replicas``; ``sides`` 2 gives each side of a game a policy of its own (``separate_sides``)."""
    action_spaces: tuple[type[ActionSpace], ...]
    """The action spaces it learns."""
    replay: Callable[[Any], ReplaySettings] | None = None
    """Its replay (None: each unroll is trained once, in order)."""
    split: Callable[[Any, int, int], Split] = one_update
    """(settings, batch_size, unroll_length) -> how a train batch splits into updates."""
    pacing: frozenset[PacedActing] = frozenset()
    """Acting modes beyond ``async`` its training paces."""
    make_policy: Callable[..., Any] | None = None
    """``make_policy(settings, spec, device, precision)``: its policy alone, as actors run it (IMPALA mode, Anakin)
    and a frozen self-play opponent copies it; None where actors cannot run it."""
    separate_sides: bool = False
    """It can train a policy per side of a game (``--self-play.opponent separate``)."""
    evaluation: Callable[[Any, bool, float], Any] = as_trained
    """(settings, greedy, epsilon) -> the settings evaluation and serving act with."""
    policy_name: Callable[[Any, bool], str] = sampled
    """(settings, greedy) -> how evaluation acts, as ``aioseed eval`` reports it."""
    evaluation_fields: Callable[[Any], dict[str, Any]] = nothing_more
    """Figures of its acting settings that ``aioseed eval`` adds to its result."""
    default_settings: Callable[[], Any] | None = None
    """Its settings where the learner config has no section for it."""
    key_hyperparameters: tuple[str, ...] = ()
    """Fields of its settings that the console's run panel shows (the rest are in logdir/config.toml)."""
    live: tuple[LiveSetting, ...] = ()
    """Fields of its settings that may change while it trains (``Agent.change_settings``), with their ranges."""
    live_refusal: Callable[[Any, Any], str | None] = never_refused
    """(settings, proposed) -> why a running learner cannot go from one to the other (None: it can)."""

    def __post_init__(self) -> None:
        if self.live and self.section is None:
            raise ValueError(f"algorithm {self.name}: live settings are fields of a config section; it has none")

    def settings(self, config: Any) -> Any:
        """Its settings in the learner config ``config``."""
        if self.section is None:
            assert self.default_settings is not None, f"algorithm {self.name} has neither a config section nor default settings"
            return self.default_settings()
        return getattr(config, self.section)

    def with_settings(self, config: Any, settings: Any) -> Any:
        """``config`` with ``settings`` in its section (unchanged for a plug-in without one)."""
        return config if self.section is None else dataclasses.replace(config, **{self.section: settings})

    @property
    def actor_policy(self) -> bool:
        """Actors can run its policy."""
        return self.make_policy is not None

    def learns(self, space: ActionSpace) -> bool:
        return isinstance(space, self.action_spaces)
