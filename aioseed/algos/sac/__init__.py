"""Soft Actor-Critic (Haarnoja et al. 2018) on the learner, as SEED RL ships it for continuous control."""
