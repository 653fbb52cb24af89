"""K environments stepped together and their pending rows (the actor's side of the done convention)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from aioseed.action_space import for_env
from aioseed.clients.clips import ClipRecorder
from aioseed.proto import aioseed_pb2 as pb
from aioseed.spec import EnvSpec
from aioseed.types import FINAL, TERMINATED, TRUNCATED, Rows


class EnvGroup:
    """Verbs: ``message`` (the pending rows as a Steps message) or ``rows`` (as arrays), ``step`` with the
    learner's actions.

    The K envs are one gymnasium vector env with next-step autoreset. When an
    episode ends, its row carries the final reward, TERMINATED and/or TRUNCATED,
    FINAL and the *final* observation. The action the learner sends back for
    that row is ignored: the next vector step resets the env, and its next row
    is the first observation of the new episode with reward 0.
    """

    def __init__(
        self, envs: gym.vector.VectorEnv, spec: EnvSpec, run_ids: np.ndarray, seed: int | None = None, recorder: ClipRecorder | None = None
    ) -> None:
        """``recorder``: records env 0's episodes (``envs`` must then render: ``rendering_vector_env``)."""
        self.envs = envs
        self.recorder = recorder
        self.spec = spec
        self.run_ids = np.asarray(run_ids, "<u8")
        k = envs.num_envs
        if len(self.run_ids) != k:
            raise ValueError(f"need {k} run_ids, got {len(self.run_ids)}")
        observations, _ = envs.reset(seed=seed)
        self.observations = np.ascontiguousarray(observations, spec.dtype)
        self.rewards = np.zeros(k, "<f4")
        self.flags = np.zeros(k, np.uint8)
        self.steps = 0
        """Env steps executed so far (autoreset steps excluded)."""
        if recorder is not None:
            recorder.after_step(0, envs.envs[0].render)  # the first episode's first frame

    def __len__(self) -> int:
        return self.envs.num_envs

    def message(self, slots: np.ndarray) -> pb.ActorMessage:
        return pb.ActorMessage(
            steps=pb.Steps(
                slots=slots.astype("<i4").tobytes(),
                run_ids=self.run_ids.tobytes(),
                rewards=self.rewards.tobytes(),
                flags=self.flags.tobytes(),
                observations=self.observations.tobytes(),
            )
        )

    def rows(self, slots: np.ndarray, evaluation: bool = False) -> Rows:
        """The pending rows as arrays, for a learner in this process (Sebulba): no serialization."""
        k = len(self)
        rows = Rows(
            slot=slots, run_id=self.run_ids, reward=self.rewards, flags=self.flags,
            observation=self.observations, evaluation=np.full(k, evaluation),
        )
        right = self.spec.right_side(k)
        if right is not None:
            rows["right"] = right
        return rows

    def step(self, actions: np.ndarray) -> None:
        resetting = self.flags != 0  # these envs autoreset in this step and ignore their action
        observations, rewards, terminated, truncated, _ = self.envs.step(for_env(self.spec.action_space, actions))
        self.steps += int(len(resetting) - resetting.sum())
        self.observations = np.ascontiguousarray(observations, self.spec.dtype)
        self.rewards = np.asarray(rewards, "<f4")
        ended = terminated | truncated
        self.flags = (terminated * TERMINATED | truncated * TRUNCATED | ended * FINAL).astype(np.uint8)
        if self.recorder is not None:
            self.recorder.after_step(int(self.flags[0]), self.envs.envs[0].render)

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
        self.envs.close()
