"""Benchmarks: each prints JSON figures next to a baseline measured in the same run."""
