"""Anakin (Podracer, Hessel et al. 2021): environments written in TensorFlow, so that acting, stepping
and learning for K steps across a batch of envs run as one compiled program, with no Python per step."""
