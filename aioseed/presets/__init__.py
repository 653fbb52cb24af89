"""Named starting points: TOML files beside this module, in ``aioseed run --config`` form (readable as
examples). ``--preset NAME`` puts a preset's flags before the flags given, which override them;
``aioseed learner --preset NAME`` takes its [learner] table."""

from __future__ import annotations

import pathlib
from typing import get_args

import tyro

from aioseed.commands.run import PresetName, RunConfig
from aioseed.compose.config import LearnerConfig
from aioseed.compose.config_file import as_flags, command_table, read
from aioseed.errors import InvalidInput, close_matches

DIRECTORY = pathlib.Path(__file__).parent
PRESETS: tuple[str, ...] = get_args(PresetName)
"""The names ``--preset`` accepts (``none``: the defaults, CartPole)."""


def preset_path(name: str) -> pathlib.Path:
    if name not in PRESETS or name == "none":
        raise InvalidInput(f"unknown preset {name!r}{close_matches(name, PRESETS)} The presets: {', '.join(PRESETS[1:])}")
    return DIRECTORY / f"{name}.toml"


def preset_flags(name: str, command: str = "run", prefix: str = "") -> list[str]:
    """The flags a preset stands for: ``aioseed run``'s (and its ``--preset NAME``, which records it),
    or with ``command`` learner those of its [learner] table; ``prefix`` nests them (``run.``)."""
    if name == "none":
        return [f"--{prefix}preset", name] if command == "run" else []
    path = preset_path(name)
    table = command_table(read(path), command, f"preset {name} ({path})")
    if command == "learner":
        return as_flags(table, LearnerConfig, f"preset {name}", prefix)
    return [*as_flags(table, RunConfig, f"preset {name}", prefix), f"--{prefix}preset", name]


def preset(name: str) -> RunConfig:
    """The ``RunConfig`` a preset names."""
    return tyro.cli(RunConfig, args=preset_flags(name), prog=f"aioseed run --preset {name}")
