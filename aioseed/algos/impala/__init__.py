"""V-trace / IMPALA agent: ``config`` (no TensorFlow), ``loss`` (pure), ``agent``."""

from aioseed.algos.impala.config import ImpalaConfig

__all__ = ["ImpalaConfig"]
