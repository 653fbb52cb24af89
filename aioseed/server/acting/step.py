"""Acting on one batch of env rows: per-env bookkeeping, the policy, actions and completed unrolls.

``Acting.step`` is synchronous and runs wherever the policy does: in the learner's inference
threads (SEED, Sebulba), or in an IMPALA actor's own process, which keeps its envs' state and
assembles their unrolls exactly as the learner would.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

import numpy as np

from aioseed.action_space import ActionSpace, invalid_actions
from aioseed.by_side import infer_by_side
from aioseed.server.acting.core_states import CoreStates
from aioseed.server.acting.env_table import EnvTable, EpisodeBoundaries
from aioseed.server.acting.frame_stack import FrameStacker
from aioseed.server.trajectories.unroll_store import UnrollStore
from aioseed.spec import EnvSpec
from aioseed.types import Column, Rows, Step, Unroll, env_actions, step_columns


class Policy(Protocol):
    """What acting needs from an agent."""

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Runs the policy on ``[B, *obs_shape]`` rows of env ``slots`` and their recurrent state
        (``evaluation``: <bool>[B] rows of evaluation envs, or None; ``rewards``: <float32>[B] the
        rewards that led to the rows, zero where an episode or a fresh unroll starts).

        Returns row-aligned outputs (incl. ``"action"``) and the next state.
        """
        ...


@runtime_checkable
class Gauged(Protocol):
    """A part with gauges for the learner's metrics snapshot."""

    def metrics(self) -> dict[str, float]: ...


class Opponent(Policy, Gauged, Protocol):
    """A policy for other rows than the learner's own (self-play's right side), with gauges of what it is."""


@runtime_checkable
class SidedPolicy(Policy, Protocol):
    """A policy per side of a multi-player game (``aioseed.algos.impala.sides.SidedAgent``): ``infer_sides`` is told
    which rows are right-side players'."""

    def infer_sides(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None,
        evaluation: np.ndarray | None,
        rewards: np.ndarray | None,
        right: np.ndarray | None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]: ...


class ActingAgent(Policy, Protocol):
    """A policy and what it keeps in unrolls (``aioseed.algos.agent.Agent`` is one)."""

    spec: EnvSpec
    """What the policy sees."""
    burn_in: int

    def output_columns(self) -> Mapping[str, Column]: ...

    def state_columns(self) -> Mapping[str, Column]: ...


@dataclasses.dataclass(frozen=True)
class PolicyCall:
    """What the policy was given for a batch of rows, kept so that ``Acting.redo`` can ask it again."""

    slots: np.ndarray
    observations: np.ndarray
    """As the policy saw them (stacked where the learner stacks frames)."""
    state: Mapping[str, np.ndarray]
    """The recurrent state the rows started from."""
    evaluation: np.ndarray
    rewards: np.ndarray
    right: np.ndarray | None = None
    """<bool>[B] right-side players' rows (``Rows["right"]``); None: none."""
    frozen: bool = False
    """The right-side rows are the frozen opponent's (self-play): never stored."""

    @property
    def learn(self) -> np.ndarray:
        """<bool>[B] rows that are stored and trained on: neither evaluation envs' nor the opponent's."""
        return ~self.evaluation if self.right is None or not self.frozen else ~(self.evaluation | self.right)


@dataclasses.dataclass
class StepResult:
    actions: np.ndarray
    boundaries: EpisodeBoundaries
    unrolls: Unroll | None
    """Completed unrolls, stacked: each column ``[U, T + 1, ...]`` and ``slot`` ``[U]``."""
    seconds: float
    """Thread time of the policy and the bookkeeping."""
    invalid: np.ndarray
    """<bool>[B] rows whose policy outputs are non-finite or whose action is out of range (no action is sent)."""
    evaluation_episodes: np.ndarray | None = None
    """<bool>[E] which of the batch's ended episodes (``boundaries.episode_returns``) were evaluation envs'."""
    call: PolicyCall | None = None
    """The policy's inputs (for ``Acting.redo``)."""
    version: int = -1
    """The parameter version read before the policy ran (stamped on the batch's steps); -1: none read."""
    right_episodes: np.ndarray | None = None
    """<bool>[E] which of the ended episodes were right-side players' (rows with ``right``); None: no such rows."""
    partial_episodes: int = 0
    """Training envs' episodes (a sided game's left side's, as ``charts/episodes`` counts) that ended in this batch
    but began before the learner saw their run: counted, never reported."""


def invalid_rows(outputs: Mapping[str, np.ndarray], space: ActionSpace) -> np.ndarray:
    """<bool>[B] rows with a non-finite float output or an action the env cannot run (an index out of range).

    Non-finite weights make the policy's logits NaN, and sampling from NaN logits gives any index.
    """
    invalid = invalid_actions(space, env_actions(outputs))
    for value in outputs.values():
        if value.dtype.kind == "f":
            invalid |= ~np.isfinite(value.reshape(len(value), -1)).all(axis=1)
    return invalid


def observe(envs: EnvTable, store: UnrollStore, inputs: Rows) -> EpisodeBoundaries:
    """Updates per-env state for a batch of rows; fresh rows discard their partial unrolls."""
    slots = inputs["slot"]
    boundaries = envs.observe(slots, inputs["run_id"], inputs["reward"], inputs["flags"], inputs.get("reconnected"))
    if boundaries.fresh.any():
        store.reset(slots[boundaries.fresh])
    return boundaries


def append(
    store: UnrollStore,
    inputs: Rows,
    observations: np.ndarray,
    boundaries: EpisodeBoundaries,
    outputs: Mapping[str, np.ndarray],
    version: int,
    learn: np.ndarray | None = None,
) -> Unroll | None:
    """Appends one step per ``learn`` row (``observations`` as the policy saw them); returns completed unrolls.

    Rows of evaluation envs (the default ``learn``: all others) and of a frozen opponent are never stored.
    """
    step = Step(
        observation=observations,
        # A fresh row's reward may have been seen already (EnvTable): it counts nowhere, and a network
        # that takes rewards as input saw 0 there at inference, as training will.
        reward=np.where(boundaries.fresh, np.float32(0), inputs["reward"]),
        done=boundaries.done,
        phantom=boundaries.phantom,
        version=np.full(len(observations), version, np.int64),
    )
    columns = {**step, **outputs}
    if learn is None:
        learn = ~inputs["evaluation"]
    if not learn.all():
        return store.append(inputs["slot"][learn], {name: column[learn] for name, column in columns.items()})
    return store.append(inputs["slot"], columns)


class Acting:
    """Verbs: ``step`` a batch of rows, ``forget`` slots whose stream ended.

    Per-env state (``EnvTable``, ``UnrollStore``, frame stacks, recurrent state) is touched only
    under one lock, before and after the policy, so that batches stepped in several threads at
    once and disconnects apply in a single order; concurrent batches hold different envs, since an
    env's next row comes only after its action.
    """

    def __init__(
        self,
        policy: Policy,
        envs: EnvTable,
        store: UnrollStore,
        version: Callable[[], int],
        space: ActionSpace,
        stacker: FrameStacker | None = None,
        states: CoreStates | None = None,
        opponent: Opponent | None = None,
    ) -> None:
        """``version``: the parameter version the policy acts with, stored with every step. ``opponent``: the
        policy of right-side rows (``Rows["right"]``), which are then never stored (self-play)."""
        self._policy = policy
        self._opponent = opponent
        self._envs = envs
        self._store = store
        self._version = version
        self._space = space
        self._stacker = stacker
        self._states = states or CoreStates({})
        self._per_env_state = threading.Lock()

    def metrics(self) -> dict[str, float]:
        """The gauges of the policies that act (self-play's opponent, aioseed serve's policy)."""
        return {key: value for part in (self._policy, self._opponent) if isinstance(part, Gauged) for key, value in part.metrics().items()}

    def forget(self, slots: np.ndarray) -> None:
        """The slots' next rows start fresh unrolls (their stream ended)."""
        with self._per_env_state:
            self._envs.forget(slots)

    def step(self, inputs: Rows) -> StepResult:
        """Per-env state, stacking, the policy, unrolls; invalid outputs are answered as action 0 and flagged."""
        started = time.perf_counter()
        slots = inputs["slot"]
        with self._per_env_state:
            boundaries = observe(self._envs, self._store, inputs)
            observations, starts = inputs["observation"], boundaries.starts
            if self._stacker is not None:
                observations = self._stacker.push(slots, observations, starts)
            state = self._states.read(slots, starts)
        evaluation = inputs["evaluation"]
        if evaluation.any():  # frames count the envs that train
            boundaries.env_steps = int((~boundaries.phantom & ~evaluation).sum())
        rewards = np.where(starts, np.float32(0), inputs["reward"]).astype(np.float32)
        right = inputs.get("right")  # right-side players' rows (multi-player Football), if any
        call = PolicyCall(
            slots=slots, observations=observations, state=state, evaluation=evaluation, rewards=rewards, right=right,
            frozen=self._opponent is not None,
        )
        version = self._version()  # read first: updates that land while the policy runs are not yet counted
        outputs, next_state, invalid = self._infer(call)
        with self._per_env_state:
            self._states.write(slots, next_state)
            # Unrolls keep the state each step started from; training replays the core from the first one.
            unrolls = append(self._store, inputs, observations, boundaries, {**outputs, **state}, version, call.learn)
        evaluating = evaluation[boundaries.ended_rows]
        right_episodes = None if right is None else right[boundaries.ended_rows]
        partial = boundaries.partial_rows  # the training envs' among them (usually none: only those rows are read)
        training = ~evaluation[partial] if right is None else ~(evaluation[partial] | right[partial])
        seconds = time.perf_counter() - started
        return StepResult(
            actions=env_actions(outputs), boundaries=boundaries, unrolls=unrolls, seconds=seconds, invalid=invalid,
            evaluation_episodes=evaluating, call=call, version=version, right_episodes=right_episodes,
            partial_episodes=int(training.sum()),
        )

    def redo(self, result: StepResult) -> StepResult:
        """Asks the policy again for ``result``'s rows, after an update (when acting waited for one): their actions,
        the outputs of their newest stored step, their version and their next recurrent state become the
        updated policy's. Unrolls that batch completed are already emitted and keep the first answers
        (only their last step had them, as its bootstrap row)."""
        started = time.perf_counter()
        call = result.call
        if call is None:
            raise ValueError("this step result keeps no policy inputs to redo")
        version = self._version()
        outputs, next_state, invalid = self._infer(call)
        learn = call.learn
        with self._per_env_state:
            self._states.write(call.slots, next_state)
            rows = {name: column[learn] for name, column in outputs.items()}
            rows["version"] = np.full(int(learn.sum()), version, np.int64)
            self._store.rewrite_last(call.slots[learn], rows)
        seconds = result.seconds + time.perf_counter() - started
        return dataclasses.replace(result, actions=env_actions(outputs), invalid=invalid, seconds=seconds, version=version)

    def _infer(self, call: PolicyCall) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
        """The policy on ``call``: outputs, next state, and the invalid rows (answered as action 0, flagged)."""
        arguments = (call.observations, call.state, call.slots, call.evaluation, call.rewards)
        if call.frozen and call.right is not None:
            assert self._opponent is not None
            outputs, next_state = infer_by_side(call.right, self._policy.infer, self._opponent.infer, *arguments)
        elif isinstance(self._policy, SidedPolicy):
            outputs, next_state = self._policy.infer_sides(*arguments, call.right)
        else:
            outputs, next_state = self._policy.infer(*arguments)
        invalid = invalid_rows(outputs, self._space)
        if invalid.any():  # stored as action 0; the rows' streams get INTERNAL instead of an action
            action = outputs["action"]
            outputs["action"] = np.where(invalid.reshape(-1, *[1] * (action.ndim - 1)), 0, action).astype(action.dtype)
        return outputs, next_state, invalid


def unroll_columns(agent: ActingAgent, spec: EnvSpec) -> dict[str, Column]:
    """One unroll step's columns: ``aioseed.types.Step``'s, then the agent's outputs and recurrent state
    (``spec``: what actors send; its dtype is the observations')."""
    return {
        **step_columns(agent.spec.observation_shape, spec.dtype),
        **agent.output_columns(),
        **agent.state_columns(),
    }


def acting_for(
    agent: ActingAgent,
    spec: EnvSpec,
    unroll_length: int,
    version: Callable[[], int],
    frame_stack: int = 1,
    opponent: Opponent | None = None,
    policy: Policy | None = None,
) -> Acting:
    """Acting with ``agent`` on rows of ``spec``: per-env unrolls of its columns (R2D2's start with ``burn_in``
    steps of the previous one), frame stacks when ``frame_stack`` > 1, its recurrent state; right-side rows
    played by ``opponent``, if given. ``policy``: what acts, where it is not ``agent`` itself (aioseed serve's)."""
    store = UnrollStore(
        agent.burn_in + unroll_length,
        unroll_columns(agent, spec),
        overlap=agent.burn_in + 1,
        first_step_only=agent.state_columns().keys(),
    )
    stacker = FrameStacker(frame_stack) if frame_stack > 1 else None
    states = CoreStates(agent.state_columns())
    return Acting(
        policy=policy or agent, envs=EnvTable(), store=store, version=version, space=agent.spec.action_space, stacker=stacker,
        states=states, opponent=opponent,
    )
