"""A run records where its code came from: the git commit, whether the tree was dirty, the versions."""

from __future__ import annotations

import importlib.metadata
import pathlib
import subprocess

from aioseed import __version__
from aioseed.commands.run import RunConfig
from aioseed.compose import config_file
from aioseed.compose.provenance import SOURCE, git_state, provenance


def git(directory: pathlib.Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_git_state_reads_the_commit_and_whether_tracked_files_changed(tmp_path) -> None:
    assert git_state(tmp_path) == ("unknown", "unknown")  # not a checkout
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git(tmp_path, "add", "a.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    head = git(tmp_path, "rev-parse", "HEAD")
    assert git_state(tmp_path) == (head, False)
    (tmp_path / "notes.txt").write_text("untracked files do not make a tree dirty\n")
    assert git_state(tmp_path) == (head, False)
    (tmp_path / "a.py").write_text("x = 2\n")
    assert git_state(tmp_path) == (head, True)
    (tmp_path / "sub").mkdir()
    assert git_state(tmp_path / "sub") == ("unknown", "unknown")  # inside a checkout, not its root


def test_the_written_config_records_the_provenance_and_still_parses_back(tmp_path) -> None:
    run = RunConfig()
    path = config_file.save(tmp_path, run, "run")
    recorded = config_file.saved_provenance(tmp_path)
    assert recorded == provenance() and "[provenance]" in path.read_text()
    assert recorded["aioseed"] == __version__
    for name in ("tensorflow", "gymnasium", "ale-py", "grpcio"):
        assert recorded[name] == importlib.metadata.version(name)
    if (SOURCE / ".git").exists():  # tests run from a checkout
        assert recorded["git_commit"] == git(SOURCE, "rev-parse", "HEAD") and isinstance(recorded["git_dirty"], bool)
    from aioseed.cli import parse

    assert parse(["run", "--config", str(path)]) == run  # [provenance] is a record, not a setting
    assert config_file.saved_provenance(tmp_path / "elsewhere") == {}
