"""Atari preprocessing (ale-py's C++ AtariVectorEnv) against Pong stepped frame by frame by hand.

The reference drives a raw ``ALEInterface`` one emulator frame at a time and
does the DQN preprocessing itself: sum the rewards of ``frameskip`` frames,
max-pool the last two grayscale screens, area-resize to 84x84 (OpenCV's
INTER_AREA), stack the newest 4. With sticky actions off, Pong is
deterministic, so every observation must match exactly.
"""

from __future__ import annotations

import ale_py
import cv2
import numpy as np
import pytest
from ale_py import roms

from aioseed.envs.atari import AtariConfig, make_atari_vector_env

NOOP, FIRE = 0, 1


class HandSteppedPong:
    """Raw ALE Pong with the preprocessing written out in NumPy.

    One ale-py detail is reproduced on purpose: when an episode ends inside a
    frame skip, the step stops there and its newest frame is the max of the
    last screen captured and the previous step's pooled screen.
    """

    def __init__(self, frameskip: int = 4, stack: int = 4, max_episode_frames: int = 108_000) -> None:
        self.frameskip = frameskip
        self.max_episode_frames = max_episode_frames
        self.ale = ale_py.ALEInterface()
        self.ale.setLoggerMode(ale_py.LoggerMode.Error)
        self.ale.setFloat("repeat_action_probability", 0.0)
        self.ale.loadROM(roms.get_rom_path("pong"))
        self.actions = self.ale.getMinimalActionSet()
        self.frames = np.zeros((stack, 84, 84), np.uint8)
        self.last_screen = np.zeros((84, 84), np.uint8)
        self.pooled = self.captured = self.ale.getScreenGrayscale()
        self.episode_frames = 0

    @staticmethod
    def resize(screen: np.ndarray) -> np.ndarray:
        return cv2.resize(screen, (84, 84), interpolation=cv2.INTER_AREA)

    def _push(self, screen: np.ndarray, newest: np.ndarray) -> np.ndarray:
        self.frames = np.concatenate([self.frames[1:], self.resize(screen)[None]])
        self.last_screen = self.resize(newest)
        return self.frames

    def reset(self, noop_frames: int = 0, fire: bool = False) -> np.ndarray:
        """FIRE (if asked), then no-op frames, as ale-py orders them."""
        self.ale.reset_game()
        if fire:
            self.ale.act(self.actions[FIRE])
        for _ in range(noop_frames - int(fire)):
            self.ale.act(self.actions[NOOP])
        self.frames = np.zeros_like(self.frames)
        self.episode_frames = 0
        self.pooled = self.ale.getScreenGrayscale()
        return self._push(self.pooled, self.pooled)

    def step(self, action: int) -> tuple[np.ndarray, float]:
        reward = 0.0
        for skip in range(self.frameskip, 0, -1):
            reward += self.ale.act(self.actions[action])
            self.episode_frames += 1
            if self.ale.game_over() or self.episode_frames >= self.max_episode_frames:
                break
            if skip == 2:
                self.captured = self.ale.getScreenGrayscale()
            elif skip == 1:
                self.pooled = self.ale.getScreenGrayscale()
        self.pooled = np.maximum(self.pooled, self.captured)
        return self._push(self.pooled, self.ale.getScreenGrayscale()), reward


def deterministic(**overrides: object) -> AtariConfig:
    settings = {"noop_max": 0, "sticky_action_probability": 0.0, "fire_reset": False, **overrides}
    return AtariConfig(**settings)


def test_steps_match_frame_skip_and_max_pool_by_hand() -> None:
    envs = make_atari_vector_env("ALE/Pong-v5", 1, deterministic())
    reference = HandSteppedPong()
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (1, 4, 84, 84) and obs.dtype == np.uint8
    np.testing.assert_array_equal(obs[0], reference.reset())
    assert not obs[0, :3].any(), "a reset stack holds only the first frame"

    rng = np.random.default_rng(0)
    rewards, pooled_mattered = [], 0
    for t in range(300):
        action = int(rng.integers(len(reference.actions)))
        obs, reward, terminated, truncated, _ = envs.step(np.array([action]))
        expected, expected_reward = reference.step(action)
        np.testing.assert_array_equal(obs[0], expected, err_msg=f"step {t}")
        assert reward[0] == expected_reward and not (terminated[0] or truncated[0])
        rewards.append(expected_reward)
        pooled_mattered += not np.array_equal(obs[0, -1], reference.last_screen)
    assert any(rewards), "a point was scored, so reward summation over skipped frames was checked"
    assert pooled_mattered > 10, "the max-pool changed frames the last screen alone would not match"


def test_noop_starts_match_that_many_noop_frames_by_hand() -> None:
    counts = []
    for seed in range(6):
        envs = make_atari_vector_env("ALE/Pong-v5", 1, deterministic(noop_max=30))
        obs, info = envs.reset(seed=seed)
        noops = int(info["episode_frame_number"][0])
        counts.append(noops)
        assert 0 <= noops < 30
        rng = np.random.default_rng(seed)
        actions = rng.integers(6, size=30)
        observed = [obs[0]] + [envs.step(np.array([a]))[0][0] for a in actions]
        envs.close()

        def replay(noop_frames: int) -> list[np.ndarray]:
            reference = HandSteppedPong()
            return [reference.reset(noop_frames).copy()] + [reference.step(int(a))[0].copy() for a in actions]

        for got, expected in zip(observed, replay(noops)):
            np.testing.assert_array_equal(got, expected)
        # The ball is in play by the end, so one frame more or less shows.
        assert not np.array_equal(observed[-1], replay(noops + 1)[-1])
    assert len(set(counts)) > 1, f"no-op counts should vary with the seed, got {counts}"


def test_fire_reset_presses_fire_once() -> None:
    envs = make_atari_vector_env("ALE/Pong-v5", 1, deterministic(fire_reset=True))
    reference = HandSteppedPong()
    obs, info = envs.reset(seed=0)
    assert info["episode_frame_number"][0] == 1
    np.testing.assert_array_equal(obs[0], reference.reset(fire=True))
    for action in [2, 3, 0, 2, 2, 3] * 12:
        np.testing.assert_array_equal(envs.step(np.array([action]))[0][0], reference.step(action)[0])


@pytest.mark.parametrize("fire_reset", [False, True])
def test_reset_observation_after_a_truncated_episode(fire_reset: bool) -> None:
    """Next-step autoreset: the truncating step carries the final frames, the step after is a fresh reset."""
    envs = make_atari_vector_env("ALE/Pong-v5", 1, deterministic(fire_reset=fire_reset, max_episode_frames=100))
    reference = HandSteppedPong(max_episode_frames=100)
    fresh, _ = envs.reset(seed=0)
    np.testing.assert_array_equal(fresh[0], reference.reset(fire=fire_reset))
    for t in range(100 // 4):
        obs, _, terminated, truncated, _ = envs.step(np.array([2]))
        np.testing.assert_array_equal(obs[0], reference.step(2)[0])
        assert not terminated[0] and truncated[0] == (t == 100 // 4 - 1)
    obs, reward, terminated, truncated, info = envs.step(np.array([3]))  # ignored: this step resets
    np.testing.assert_array_equal(obs[0], fresh[0])
    assert not obs[0, :3].any() and reward[0] == 0 and not (terminated[0] or truncated[0])
    assert info["episode_frame_number"][0] == int(fire_reset)


def test_the_single_env_that_renders_colour_matches_the_vector_env() -> None:
    from aioseed.envs.atari_frames import AtariFrames

    config = deterministic(fire_reset=True, max_episode_frames=400)
    envs = make_atari_vector_env("ALE/Pong-v5", 1, config)
    single = AtariFrames("ALE/Pong-v5", config)
    obs, _ = envs.reset(seed=0)
    mine, info = single.reset(seed=0)
    np.testing.assert_array_equal(obs[0], mine)
    assert info["episode_frame_number"] == 1  # FIRE pressed once
    rng = np.random.default_rng(1)
    for t in range(100):  # 400 frames: the last step truncates
        action = int(rng.integers(6))
        obs, reward, terminated, truncated, _ = envs.step(np.array([action]))
        mine, my_reward, my_terminated, my_truncated, _ = single.step(action)
        np.testing.assert_array_equal(obs[0], mine, err_msg=f"step {t}")
        assert (reward[0], terminated[0], truncated[0]) == (my_reward, my_terminated, my_truncated)
    assert my_truncated
    screen = single.render()
    assert screen.shape == (210, 160, 3) and screen.dtype == np.uint8
    assert (screen[..., 0] != screen[..., 2]).any()  # colour, not the grayscale the policy sees
