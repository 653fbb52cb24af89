"""Config files: TOML tables that mirror a command's flags, read with ``tomllib``, and the resolved
config of a run written back the same way.

A file becomes that command's flags (``[learner.impala] learning_rate = 5e-4`` is
``--learner.impala.learning-rate 5e-4`` under ``aioseed run``), placed before the flags given, so
that tyro parses, converts and checks every value, and the flags given win. ``None`` is written as
the string ``"None"`` (TOML has no null; tyro reads it back as None).
"""

from __future__ import annotations

import dataclasses
import pathlib
import tomllib
import typing
from collections.abc import Mapping
from typing import Any

import tomli_w
import tyro

from aioseed.errors import InvalidInput, MissingFile, close_matches

SECRETS = frozenset({"token"})
"""Fields never written to a logdir: one that was set is written as ``NOT_STORED``, which a command
refuses to run with (pass the secret again as a flag)."""
NOT_STORED = "<not stored: pass it as a flag>"
PROVENANCE = "provenance"
"""The table of a written config that records where the run's code came from (not a setting)."""


class ConfigFileError(InvalidInput):
    """A config file that cannot be read, or names a key the command does not have."""


def read(path: pathlib.Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except FileNotFoundError:
        raise ConfigFileError(f"config file {path} not found") from None
    except OSError as exc:  # a directory, no permission
        raise ConfigFileError(f"config file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"config file {path}: {exc}") from None


def check_same_env(logdir: pathlib.Path, env: str) -> None:
    """A logdir's checkpoints are one env's run: resumed with another env, they would not fit, or (the same shapes)
    would go on silently as the other game's run. Refused, naming both."""
    try:
        table = read(logdir / "config.toml")
    except ConfigFileError:
        return
    saved = table.get("learner", table).get("env")
    if isinstance(saved, str) and saved.rpartition(":")[2] != env.rpartition(":")[2]:  # an env module may have moved
        raise InvalidInput(
            f"{logdir} holds a run of {saved}, not {env}: give this run a logdir of its own (--logdir; under aioseed "
            f"run, --learner.logdir), with --init-checkpoint {logdir} to start from that run's weights"
        )


def unknown_key(key: str, cls: type, prefix: str) -> str:
    """What is wrong with ``key`` in a table of ``cls``: the key that replaced it, or the closest ones."""
    from aioseed.compose.config import RENAMED_FLAGS, RENAMED_SECTIONS, LearnerConfig

    spelled = key.replace("_", "-")
    if cls is LearnerConfig and spelled in RENAMED_FLAGS:
        section, _, leaf = RENAMED_FLAGS[spelled].rpartition(".")
        table = f"[{prefix}{section}]".replace(".]", "]") if section else f"[{prefix.rstrip('.')}]"
        return f"{prefix}{key} was renamed {prefix}{RENAMED_FLAGS[spelled]}: write it as {leaf} = ... in {table}"
    if cls is LearnerConfig and spelled in RENAMED_SECTIONS:
        return f"the section {prefix}{key} was renamed {prefix}{RENAMED_SECTIONS[spelled]}"
    names = [field.name.replace("_", "-") for field in dataclasses.fields(cls)]
    return f"unknown key {prefix}{key}{close_matches(spelled, names)} The keys here: {', '.join(prefix + n for n in names)}"


def as_flags(table: Mapping[str, Any], cls: type, source: str, prefix: str = "") -> list[str]:
    """The flags of ``cls`` (a config dataclass) that ``table`` sets; unknown keys are errors."""
    fields = {field.name: field for field in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    flags: list[str] = []
    for key, value in {**_values_before(table, cls), **table}.items():
        name = key.replace("-", "_")
        if name not in fields:
            raise ConfigFileError(f"{source}: {unknown_key(key, cls, prefix)}")
        if _positional(cls, name):
            raise ConfigFileError(f"{source}: {prefix}{key} is given on the command line, as the command's arguments")
        section = dataclasses.is_dataclass(hints[name])
        if isinstance(value, dict) != section:
            kind = "a table" if section else "a value"
            raise ConfigFileError(f"{source}: {prefix}{key} must be {kind}")
        if section:
            flags += as_flags(value, hints[name], source, f"{prefix}{name}.")
        else:
            flags += _flag(f"{prefix}{name}", value, prefix)
    return flags


def _values_before(table: Mapping[str, Any], cls: type) -> dict[str, Any]:
    """What a run's saved table that predates fields of ``cls`` (its ``VALUES_BEFORE``) means by their absence: it
    lists every other field, as a saved config does (a hand-written table lists some, and takes the defaults)."""
    before: Mapping[str, Any] = getattr(cls, "VALUES_BEFORE", {})
    others = {field.name for field in dataclasses.fields(cls)} - before.keys()
    if not before or not others <= {key.replace("-", "_") for key in table}:
        return {}
    return {name: value for name, value in before.items() if name not in table}


def _positional(cls: type, name: str) -> bool:
    """A field tyro takes as the command's arguments (``report``'s logdirs), not as a flag."""
    marker = typing.get_args(tyro.conf.Positional[int])[1]
    return marker in typing.get_args(typing.get_type_hints(cls, include_extras=True)[name])[1:]


def _flag(flag: str, value: Any, prefix: str) -> list[str]:
    if isinstance(value, bool):  # tyro's booleans are --x / --no-x (--learner.console.no-enabled)
        return [f"--{flag}" if value else f"--{prefix}no-{flag[len(prefix):]}"]
    if isinstance(value, list):
        return [f"--{flag}", *(str(v) for v in value)]
    return [f"--{flag}", str(value)]


def document(config: object) -> dict[str, Any]:
    """``config`` (a dataclass) as a TOML-ready table: paths as strings, tuples as arrays, None as
    ``"None"``; secrets as ``NOT_STORED`` (or "None" where none was set)."""

    def convert(value: Any) -> Any:
        if dataclasses.is_dataclass(value):
            return {
                f.name: (NOT_STORED if getattr(value, f.name) is not None else "None") if f.name in SECRETS else convert(getattr(value, f.name))
                for f in dataclasses.fields(value)
            }
        if value is None:
            return "None"
        if isinstance(value, (tuple, list)):
            return [convert(v) for v in value]
        if isinstance(value, pathlib.PurePath):
            return str(value)
        return value

    return convert(config)


def dumps(config: object, command: str, header: str = "", provenance: Mapping[str, Any] | None = None) -> str:
    """TOML of ``config`` for ``aioseed COMMAND --config FILE``, sections after plain keys; ``provenance``
    (``aioseed.compose.provenance``) as a last ``[provenance]`` table, which reading a file skips."""
    table = document(config)
    plain = {k: v for k, v in table.items() if not isinstance(v, dict)}
    sections = {k: v for k, v in table.items() if isinstance(v, dict)}
    if provenance is not None:
        sections[PROVENANCE] = dict(provenance)
    comment = "".join(f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines())
    return comment + tomli_w.dumps({"command": command, **plain, **sections})


def command_table(data: Mapping[str, Any], command: str, source: str) -> dict[str, Any]:
    """The part of a file that configures ``command``: a file written by ``aioseed run`` holds the
    learner's config under [learner], one written by ``aioseed learner`` holds it at the top."""
    data = dict(data)
    data.pop(PROVENANCE, None)
    written_by = data.pop("command", command)
    if written_by == command:
        return data
    if written_by == "run" and command == "learner":
        return dict(data.get("learner", {}))
    if written_by == "learner" and command == "run":  # run's learner serves its local actors on loopback
        server = {k: v for k, v in data.get("server", {}).items() if k not in ("host", "port")}
        return {"learner": {**data, "server": server}}
    if written_by in ("run", "learner") and command == "eval":  # evaluate that run
        logdir = data.get("learner", {}).get("logdir") if written_by == "run" else data.get("logdir")
        return {} if logdir in (None, "None") else {"logdir": logdir}
    raise ConfigFileError(f"{source} configures aioseed {written_by}, not aioseed {command}")


def save(logdir: pathlib.Path, config: object, command: str, notes: str = "") -> pathlib.Path:
    """Writes logdir/config.toml: ``aioseed COMMAND --config`` it to run the same again (secrets are
    marked, not stored), and ``aioseed eval`` rebuilds the agent from it. Its ``[provenance]`` table records
    the git commit, whether the tree was dirty, and the libraries' versions; ``notes`` join the header."""
    from aioseed.compose.provenance import provenance

    logdir.mkdir(parents=True, exist_ok=True)
    path = logdir / "config.toml"
    header = f"The resolved config of this run: aioseed {command} --config {path} runs it again\n(flags given after it override it; tokens are not written)."
    if notes:
        header += "\n" + notes
    path.write_text(dumps(config, command, header, provenance()))
    return path


def saved_provenance(logdir: pathlib.Path) -> dict[str, Any]:
    """The ``[provenance]`` a run wrote to ``logdir/config.toml`` (empty for runs of older versions)."""
    path = logdir / "config.toml"
    return dict(read(path).get(PROVENANCE, {})) if path.exists() else {}


def saved_learner(logdir: pathlib.Path) -> Any:
    """The ``LearnerConfig`` a learner wrote to ``logdir`` (config.toml; config.json from older versions)."""
    import json

    import tyro

    from aioseed.compose.config import LearnerConfig

    path = logdir / "config.toml"
    if path.exists():
        table = command_table(read(path), "learner", str(path))
    elif (path := logdir / "config.json").exists():
        table = json.loads(path.read_text())
    else:
        raise MissingFile(f"{logdir} holds no config.toml: give the --logdir of a run (aioseed run or learner writes one there)")
    return tyro.cli(LearnerConfig, args=as_flags(table, LearnerConfig, str(path)), prog=f"config of {logdir}")


def missing_secrets(config: object, prefix: str = "") -> list[str]:
    """Flags of the secrets in ``config`` that a config file marked as set but did not store."""
    missing = []
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if dataclasses.is_dataclass(value):
            missing += missing_secrets(value, f"{prefix}{field.name}.")
        elif value == NOT_STORED:
            missing.append(f"--{prefix}{field.name}")
    return missing
