"""The ``aioseed`` command line, generated from the component configs with tyro."""

from __future__ import annotations

import sys

import structlog
import tyro

from aioseed import log as logging_setup
from aioseed.bench.config import Bench, LearningCurveBench
from aioseed.clients.actor import ActorConfig
from aioseed.clients.fleet import FleetConfig
from aioseed.evaluate import EvalConfig
from aioseed.launch import RunConfig
from aioseed.server.config import RENAMED_FLAGS, RENAMED_SECTIONS, LearnerConfig

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
    return dispatch(parse(argv))


def parse(argv: list[str]) -> object:
    """The config of the subcommand ``argv`` names; ``run --preset NAME`` starts from that preset."""
    argv = upgrade_flags(argv)
    command = tyro.extras.subcommand_cli_from_dict(
        {
            "learner": LearnerConfig,
            "actor": ActorConfig,
            "actors": FleetConfig,
            "run": RunConfig,
            "eval": EvalConfig,
            "bench": Bench,
        },
        prog="aioseed",
        args=argv,
    )
    # Parse again on top of the preset, so that the flags given override its values.
    if isinstance(command, RunConfig) and command.preset != "none":
        from aioseed.presets import preset

        command = tyro.cli(RunConfig, default=preset(command.preset), args=argv[argv.index("run") + 1 :], prog="aioseed run")
    elif isinstance(command, Bench) and isinstance(command.command, LearningCurveBench):
        from aioseed.presets import preset

        default = LearningCurveBench(preset=command.command.preset, run=preset(command.command.preset))
        args = argv[argv.index("learning-curve") + 1 :]
        command = Bench(tyro.cli(LearningCurveBench, default=default, args=args, prog="aioseed bench learning-curve"))
    return command


def dispatch(command: object) -> int:
    import uvloop

    from aioseed import launch
    from aioseed.tf_start import start_tensorflow

    if not isinstance(command, (ActorConfig, FleetConfig)) or getattr(command, "architecture", "seed") == "impala":
        start_tensorflow()

    match command:
        case LearnerConfig():
            return uvloop.run(launch.serve_learner(command))
        case ActorConfig():
            return uvloop.run(launch.run_any_actor(command))
        case FleetConfig():
            from aioseed.clients.fleet import run_fleet

            return uvloop.run(run_fleet(command))
        case RunConfig(architecture="anakin"):
            return launch.run_anakin(command)
        case RunConfig():
            return uvloop.run(launch.run_local(command))
        case EvalConfig():
            from aioseed import evaluate

            return evaluate.main(command)
        case Bench():
            from aioseed.bench.run import run_bench

            return run_bench(command.command)
    raise TypeError(f"unknown command {command!r}")


if __name__ == "__main__":
    sys.exit(main())
