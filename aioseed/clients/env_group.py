"""K environments stepped together and their pending rows (the actor's side of the done convention), and an
actor's envs in such groups."""

from __future__ import annotations

import secrets
from typing import Any

import gymnasium as gym
import numpy as np
import structlog

from aioseed.action_space import for_env
from aioseed.clients.clips import ClipRecorder
from aioseed.clients.config import ActorConfig
from aioseed.envs.life_loss import LIFE_LOST_INFO
from aioseed.envs.registry import env_kwargs, make_vector_env, vector_env_spec
from aioseed.proto import aioseed_pb2 as pb
from aioseed.spec import EnvSpec
from aioseed.types import FINAL, LIFE_LOST, TERMINATED, TRUNCATED, Rows

log = structlog.get_logger()


class EnvGroup:
    """Verbs: ``message`` (the pending rows as a Steps message) or ``rows`` (as arrays), ``step`` with the
    learner's actions.

    The K envs are one gymnasium vector env with next-step autoreset. When an
    episode ends, its row carries the final reward, TERMINATED and/or TRUNCATED,
    FINAL and the *final* observation. The action the learner sends back for
    that row is ignored: the next vector step resets the env, and its next row
    is the first observation of the new episode with reward 0. A lost life under
    ``--atari.episodic-life`` gives such a row with LIFE_LOST too, and the env
    relaunches the game instead of resetting it (``aioseed.envs.life_loss``).
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
            recorder.after_step(0, self._render)  # the first episode's first frame

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
        resetting = self.flags != 0  # these envs autoreset (or relaunch after a lost life) and ignore their action
        observations, rewards, terminated, truncated, infos = self.envs.step(for_env(self.spec.action_space, actions))
        self.steps += int(len(resetting) - resetting.sum())
        self.observations = np.ascontiguousarray(observations, self.spec.dtype)
        self.rewards = np.asarray(rewards, "<f4")
        ended = terminated | truncated
        flags = terminated * TERMINATED | truncated * TRUNCATED | ended * FINAL
        life_lost = infos.get(LIFE_LOST_INFO)  # only under --atari.episodic-life
        if life_lost is not None:
            flags = flags | np.asarray(life_lost, bool) * (LIFE_LOST | FINAL | TERMINATED)
        self.flags = flags.astype(np.uint8)
        if self.recorder is not None:
            whole_game = life_lost is None or not life_lost[0]  # a clip is a whole game
            self.recorder.after_step(int(self.flags[0]) if whole_game else 0, self._render)

    def _render(self) -> np.ndarray:
        from aioseed.envs.rendering import first_frame

        return first_frame(self.envs)

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
        self.envs.close()


def env_groups(config: ActorConfig) -> tuple[EnvSpec, np.ndarray, list[EnvGroup]]:
    """The actor's envs in groups of ``envs_per_message``: (spec, each env's run_id, the groups)."""
    k = config.envs_per_message
    sizes = [min(k, config.num_envs - start) for start in range(0, config.num_envs, k)]
    kwargs = env_kwargs(config.env_kwargs)
    rendering = None if config.video_dir is None else recording_envs(config, sizes[0], kwargs)
    recorder = None
    if rendering is not None:  # the first group renders, and its env 0 is recorded
        recorder = ClipRecorder(config.video_dir, config.video_every)
    vector_envs = [
        rendering
        if i == 0 and rendering is not None
        else make_vector_env(config.env, size, config.atari, config.football, kwargs, config.env_backend)
        for i, size in enumerate(sizes)
    ]
    spec = vector_env_spec(config.env, vector_envs[0], config.atari)
    rows = [envs.num_envs for envs in vector_envs]  # a Football game with several controlled players: a row each
    # Drawn once per process: the same across reconnects, new after a restart.
    run_ids = np.array([secrets.randbits(64) | 1 for _ in range(sum(rows))], np.uint64)
    offsets = np.cumsum([0, *rows])
    groups = [
        EnvGroup(
            envs=envs, spec=spec, run_ids=run_ids[offsets[i] : offsets[i + 1]],
            seed=None if config.seed is None else config.seed + int(offsets[i]), recorder=recorder if i == 0 else None,
        )
        for i, envs in enumerate(vector_envs)
    ]
    return spec, run_ids, groups


def recording_envs(config: ActorConfig, size: int, kwargs: dict[str, Any]) -> gym.vector.VectorEnv | None:
    """``size`` envs whose env 0 renders full-colour frames, or None (with a warning: the actor runs on
    without clips) when this env cannot render any."""
    from aioseed.envs.rendering import first_frame, rendering_vector_env

    envs = None
    try:
        envs = rendering_vector_env(config.env, size, config.atari, kwargs)
        envs.reset(seed=config.seed)
        frame = first_frame(envs)
        if not (isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.shape[2] == 3):
            raise TypeError(f"render() gave {type(frame).__name__}, not an RGB frame")
    except Exception as exc:  # whatever a user's env raises for render_mode="rgb_array"
        log.warning("clips_off", env=config.env, reason=f"{type(exc).__name__}: {exc}"[:200])
        if envs is not None:
            envs.close()
        return None
    return envs
