"""One Atari game with ale-py's ``AtariVectorEnv`` preprocessing written out frame by frame, that can
also ``render`` the full-colour screen: ``aioseed eval --video`` records these frames while the policy
sees the 84x84 stacks it trained on (tests/envs/test_atari_preprocessing.py checks that the two envs
give the same observations).

Each step repeats the action ``frameskip`` times, sums the rewards and max-pools the last two grayscale
screens (an episode that ends inside the skip stops there); frames are area-resized to 84x84 and the
newest ``stack`` are kept. A reset presses FIRE in games whose second action is FIRE, then takes up
to ``noop_max - 1`` no-op frames. Sticky actions are ALE's own. ``episodic_life`` wraps the vector env
(``rendering_vector_env``), as it wraps ale-py's.
"""

from __future__ import annotations

from typing import Any

import ale_py
import cv2
import gymnasium as gym
import numpy as np
from ale_py import roms

from aioseed.envs.atari import AtariConfig, game_name

SIZE = 84


class AtariFrames(gym.Env):
    """``ALE/<Game>-v5`` as one env: uint8[stack, 84, 84] observations, ``render()`` the RGB screen."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, env_id: str, config: AtariConfig = AtariConfig(), render_mode: str | None = "rgb_array") -> None:
        self.config = config
        self.render_mode = render_mode
        self._game = roms.get_rom_path(game_name(env_id))
        self.ale = ale_py.ALEInterface()
        self.ale.setLoggerMode(ale_py.LoggerMode.Error)
        self.ale.setFloat("repeat_action_probability", config.sticky_action_probability)
        self.ale.loadROM(self._game)
        self.actions = self.ale.getMinimalActionSet()
        self._fire = config.fire_reset and len(self.actions) > 1 and self.actions[1] == ale_py.Action.FIRE
        self.observation_space = gym.spaces.Box(0, 255, (config.stack, SIZE, SIZE), np.uint8)
        self.action_space = gym.spaces.Discrete(len(self.actions))
        self._frames = np.zeros((config.stack, SIZE, SIZE), np.uint8)
        self._pooled = self._captured = self.ale.getScreenGrayscale()
        self._episode_frames = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:  # ALE's own generator (sticky actions) follows the seed too
            self.ale.setInt("random_seed", int(self.np_random.integers(2**31)))
            self.ale.loadROM(self._game)
        self.ale.reset_game()
        noops = int(self.np_random.integers(self.config.noop_max)) if self.config.noop_max > 0 else 0
        if self._fire:
            self.ale.act(self.actions[1])
        for _ in range(noops - int(self._fire)):
            self.ale.act(self.actions[0])
        self._frames[:] = 0
        self._episode_frames = 0
        self._pooled = self.ale.getScreenGrayscale()
        return self._push(self._pooled), {"episode_frame_number": self.ale.getEpisodeFrameNumber(), "lives": self.ale.lives()}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        reward = 0.0
        for skip in range(self.config.frameskip, 0, -1):
            reward += self.ale.act(self.actions[int(action)])
            self._episode_frames += 1
            if self.ale.game_over() or self._episode_frames >= self.config.max_episode_frames:
                break
            if skip == 2:
                self._captured = self.ale.getScreenGrayscale()
            elif skip == 1:
                self._pooled = self.ale.getScreenGrayscale()
        self._pooled = np.maximum(self._pooled, self._captured)
        terminated = self.ale.game_over()
        truncated = not terminated and self._episode_frames >= self.config.max_episode_frames
        return self._push(self._pooled), reward, terminated, truncated, {"lives": self.ale.lives()}

    def render(self) -> np.ndarray:
        """The full-colour screen, uint8[210, 160, 3]."""
        return self.ale.getScreenRGB()

    def _push(self, screen: np.ndarray) -> np.ndarray:
        self._frames = np.concatenate([self._frames[1:], cv2.resize(screen, (SIZE, SIZE), interpolation=cv2.INTER_AREA)[None]])
        return self._frames.copy()
