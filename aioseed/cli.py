"""The ``aioseed`` command line, generated from the component configs with tyro."""

from __future__ import annotations

import dataclasses
import pathlib
import sys
from collections.abc import Callable
from typing import Any

import structlog
import tyro

from aioseed import log as logging_setup
from aioseed.bench.config import BENCHES, Bench, LearningCurveBench
from aioseed.bench.recipe_config import TimeToScoreBench
from aioseed.clients.actor import ActorConfig
from aioseed.clients.fleet import FleetConfig
from aioseed.commands.evaluate import EvalConfig
from aioseed.commands.run import RunConfig
from aioseed.commands.serve import ServeConfig
from aioseed.compose import config_file
from aioseed.compose.config import RENAMED_FLAGS, RENAMED_SECTIONS, LearnerConfig
from aioseed.errors import InvalidInput, UserError
from aioseed.results.report import ReportConfig
from aioseed.sweep.config import SweepConfig

log = structlog.get_logger()

LEARNER_FLAGS_PREFIX = {"learner": "", "run": "learner.", "bench": "run.learner."}
"""Where each subcommand keeps the learner's flags."""


def upgrade_flags(argv: list[str]) -> list[str]:
    """Maps the learner's flags of earlier versions to their sections, saying so once each: flat ones
    (``--console-port``, ``--learner.max-streams``) and the ``vtrace`` section and agent (now ``impala``)."""
    prefix = LEARNER_FLAGS_PREFIX.get(argv[0] if argv else "")
    if prefix is None:
        return argv
    upgraded: list[str] = []
    for arg in argv:
        flag, eq, value = arg.partition("=")
        new = None
        if flag.startswith("--" + prefix):
            name = flag[2 + len(prefix) :]
            section, dot, rest = name.partition(".")
            if name.replace("_", "-") in RENAMED_FLAGS:
                new = RENAMED_FLAGS[name.replace("_", "-")]
            elif dot and section in RENAMED_SECTIONS:
                new = f"{RENAMED_SECTIONS[section]}.{rest}"  # the field's own spelling, e.g. lambda_
        if new is not None:
            log.warning("flag_renamed", old=flag, new=f"--{prefix}{new}")
            arg = f"--{prefix}{new}{eq}{value}"
        elif arg in (f"{prefix}r2d2:cartpole", f"{prefix}r2d2:atari"):  # R2D2's presets were subcommands
            preset = ["--preset", "r2d2-cartpole"] if arg.endswith("cartpole") else []
            log.warning("flag_renamed", old=arg, new=" ".join(preset) or "(the default R2D2 settings)")
            upgraded += preset
            continue
        elif (arg == "vtrace" and upgraded and upgraded[-1] == f"--{prefix}agent") or arg == f"--{prefix}agent=vtrace":
            log.warning("flag_renamed", old="--agent vtrace", new="--agent impala")
            arg = arg.replace("vtrace", "impala")
        upgraded.append(arg)
    return upgraded


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["--version"], ["-V"]):
        from aioseed import __version__

        sys.stdout.write(f"aioseed {__version__}\n")
        return 0
    logging_setup.configure()
    try:
        # Every value the configs refuse when they are built (ValueError) is a mistake in the flags or files.
        command = parse(argv)
    except ValueError as exc:
        return user_error(exc)
    try:
        return dispatch(command)
    except UserError as exc:
        return user_error(exc)


def user_error(exc: BaseException) -> int:
    """One line on stderr, and exit status 2 (a traceback would say aioseed crashed)."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    sys.stderr.write(f"aioseed: error: {message}\n")
    return 2


COMMANDS = {
    "learner": LearnerConfig,
    "actor": ActorConfig,
    "actors": FleetConfig,
    "run": RunConfig,
    "eval": EvalConfig,
    "serve": ServeConfig,
    "report": ReportConfig,
    "sweep": SweepConfig,
    "bench": Bench,
}


def parse(argv: list[str]) -> object:
    """The config of the subcommand ``argv`` names. ``--preset NAME`` and ``--config FILE`` stand for
    the flags in those files, in that order, before the flags given (which win); every value is then
    checked once, on the whole."""
    argv = upgrade_flags(argv)
    if argv[:1] == ["sweep"]:
        return _parse(argv)  # its --config is the sweep file, read by aioseed.sweep
    plain, presets, files = _take_file_flags(argv)
    target = _target(plain)
    if target is None:
        return _parse(plain)  # tyro says what is wrong (or prints the help)
    name, config_class, head = target
    if config_class in PRESET_BENCHES and not presets:
        presets = [config_class.__dataclass_fields__["preset"].default]  # it always starts from one
    flags = [flag for preset in presets for flag in _preset_flags(config_class, preset)]
    for path in files:
        table = config_file.command_table(config_file.read(path), name, str(path))
        flags += config_file.as_flags(table, config_class, str(path))
    # The command's own arguments (report's logdirs) before the files' flags, which a list flag would swallow.
    given = plain[head:]
    leading = next((i for i, arg in enumerate(given) if arg.startswith("-")), len(given))
    command = _parse([*plain[:head], *given[:leading], *flags, *given[leading:]])
    missing = config_file.missing_secrets(command)
    if missing:
        raise config_file.ConfigFileError(f"a config file marks {', '.join(missing)} as set but does not store it: pass it as a flag")
    return command


def _target(argv: list[str]) -> tuple[str, type, int] | None:
    """(command name, its config class, how many tokens name it) of ``argv``, when it names one."""
    if not argv or argv[0] not in COMMANDS:
        return None
    if argv[0] != "bench":
        return argv[0], COMMANDS[argv[0]], 1
    if len(argv) < 2 or argv[1] not in BENCHES:
        return None
    return "bench", BENCHES[argv[1]], 2


def _parse(argv: list[str]) -> object:
    return tyro.extras.subcommand_cli_from_dict(COMMANDS, prog="aioseed", args=argv)


PRESET_BENCHES: tuple[type, ...] = (LearningCurveBench, TimeToScoreBench)
"""Benches with a ``preset`` field of their own that always start from one (their default)."""


def _take_file_flags(argv: list[str]) -> tuple[list[str], list[str], list[pathlib.Path]]:
    """(argv without --preset and --config, the presets named, the config files named)."""
    plain: list[str] = []
    presets: list[str] = []
    files: list[pathlib.Path] = []
    args = iter(argv)
    for arg in args:
        flag, eq, value = arg.partition("=")
        if flag not in ("--preset", "--run.preset", "--config"):
            plain.append(arg)
            continue
        value = value if eq else next(args, None)
        if not value:
            raise InvalidInput(f"{flag} needs a value")
        if flag in ("--preset", "--run.preset"):  # a bench's run: the preset's flags, not only its name
            presets.append(value)
        else:
            files.append(pathlib.Path(value))
    return plain, presets, files


def _preset_flags(config_class: type, name: str) -> list[str]:
    from aioseed.presets import preset_flags

    if config_class is RunConfig:
        return preset_flags(name)
    if config_class is LearnerConfig:
        return preset_flags(name, command="learner")
    if config_class in PRESET_BENCHES:
        return [*preset_flags(name, prefix="run."), "--preset", name]
    if "run" in {field.name for field in dataclasses.fields(config_class)}:  # benches that train a run
        return preset_flags(name, prefix="run.")
    raise InvalidInput("--preset applies to run, learner and the benches that train a run (bench atari, acting, learning-curve, ...)")


def missing_extra(extra: str, *modules: str) -> int:
    """2 (after one line on stderr) when one of ``modules`` is not installed, else 0."""
    import importlib.util

    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    if absent:
        sys.stderr.write(f"aioseed: this command needs {', '.join(absent)}: pip install 'aioseed[{extra}]'\n")
        return 2
    return 0


def _env_id(command: object) -> str | None:
    """The env id ``command`` will make, where it names one."""
    match command:
        case LearnerConfig() | ActorConfig():
            return command.env
        case RunConfig():
            return command.learner.env
        case EvalConfig():
            return command.env
        case FleetConfig() if command.ray == "local":  # a remote cluster's workers may have packages this machine lacks
            return command.actor.env
    return None


MAINS: dict[type, str] = {
    LearnerConfig: "aioseed.commands.learner",
    ActorConfig: "aioseed.commands.actor",
    FleetConfig: "aioseed.commands.actors",
    RunConfig: "aioseed.commands.run",
    EvalConfig: "aioseed.commands.evaluate",
    ServeConfig: "aioseed.commands.serve",
    ReportConfig: "aioseed.results.report",
    SweepConfig: "aioseed.sweep.study",
}
"""The module whose ``main`` runs each command, imported when it runs: an actor never loads TensorFlow."""


def dispatch(command: object) -> int:
    import importlib

    from aioseed.tf_start import start_tensorflow

    if isinstance(command, (ReportConfig, SweepConfig)):  # a sweep's trials are aioseed run processes
        if missing := missing_extra("results", "rliable", "optuna"):
            return missing
    else:
        env_id = _env_id(command)
        if env_id is not None:
            from aioseed.envs.registry import check_env_id

            check_env_id(env_id)  # an unknown id is one line now, not an error from deep inside the start
        if not isinstance(command, (ActorConfig, FleetConfig)) or getattr(command, "architecture", "seed") == "impala":
            start_tensorflow()
    if isinstance(command, Bench):
        from aioseed.bench.run import run_bench

        return run_bench(command.command)
    module = MAINS.get(type(command))
    if module is None:
        raise TypeError(f"unknown command {command!r}")
    run_command: Callable[[Any], int] = importlib.import_module(module).main
    return run_command(command)


if __name__ == "__main__":
    sys.exit(main())
