"""Evaluation clips: the first episode of env 0 and then every Nth, one frame per step plus the first,
the newest few kept; evaluation actors only."""

from __future__ import annotations

import imageio_ffmpeg
import numpy as np
import pytest

from aioseed.clients.actor import ActorConfig
from aioseed.clients.clips import ClipRecorder
from aioseed.clients.env_group import EnvGroup
from aioseed.envs.registry import vector_env_spec
from aioseed.envs.rendering import first_frame, rendering_vector_env
from aioseed.types import FINAL


def test_the_first_and_every_nth_episode_of_env_0_are_recorded(tmp_path) -> None:
    envs = rendering_vector_env("CartPole-v1", 2)
    recorder = ClipRecorder(tmp_path, every=2, keep=2)
    group = EnvGroup(envs, vector_env_spec("CartPole-v1", envs), np.array([1, 2], np.uint64), seed=0, recorder=recorder)
    rng = np.random.default_rng(0)
    lengths, steps = [], 0
    while len(lengths) < 5:
        resetting = bool(group.flags[0])
        group.step(rng.integers(0, 2, 2))
        steps += not resetting
        if group.flags[0] & FINAL:
            lengths.append(steps)
            steps = 0
    group.close()
    assert recorder.episodes == 5 and len(recorder.written) == 3  # episodes 1, 3 and 5
    kept = sorted(tmp_path.glob("eval-*.mp4"))
    assert kept == recorder.written[-2:] and not list(tmp_path.glob("*.partial.mp4"))
    for path, length in zip(kept, [lengths[2], lengths[4]], strict=True):
        frames = imageio_ffmpeg.read_frames(str(path))
        assert next(frames)["size"] == (600, 400)
        assert sum(1 for _ in frames) == length + 1


def test_only_evaluation_actors_record() -> None:
    with pytest.raises(ValueError, match="video_dir records evaluation actors' episodes"):
        ActorConfig(video_dir="videos")
    ActorConfig(video_dir="videos", evaluation=True)


def test_an_env_that_cannot_render_leaves_the_evaluation_actor_running_without_clips(tmp_path) -> None:
    from aioseed.clients.env_group import env_groups

    # The corridor of the custom-env test has no render_mode: the actor warns and records nothing.
    config = ActorConfig(env="tests.envs.corridor:Corridor-v0", num_envs=2, envs_per_message=2, evaluation=True, video_dir=tmp_path)
    _, _, groups = env_groups(config)
    assert groups[0].recorder is None
    groups[0].step(np.ones(2, np.int32))
    for group in groups:
        group.close()
    assert not list(tmp_path.iterdir())


def test_recorded_envs_serve_structured_observations_flattened_as_training_does() -> None:
    import tests.envs.corridor  # noqa: F401  (registers TwinCorridors-v0: a Dict of two Discrete(4))

    envs = rendering_vector_env("TwinCorridors-v0", 1)
    spec = vector_env_spec("TwinCorridors-v0", envs)
    observations, _ = envs.reset(seed=0)
    assert spec.observation_shape == (8,) and observations.shape == (1, 8)  # two one-hots of 4
    np.testing.assert_array_equal(observations[0], [1, 0, 0, 0, 1, 0, 0, 0])
    assert first_frame(envs).shape == (2, 4, 3)
    envs.close()
