"""A user's mistakes, each run as a real ``aioseed`` process: exit status 2 and one line that says what was wrong
and what to do, never a traceback; a bug of aioseed's keeps its traceback."""

from __future__ import annotations

import socket
import subprocess

import pytest
from tests.processes import ENV, PYTHON
from tests.results.test_report import a_run
from tests.server.transport.test_security import self_signed

from aioseed import cli, load_policy
from aioseed.errors import UserError


def aioseed(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "aioseed", *args], capture_output=True, text=True, env=ENV, cwd=cwd, timeout=240)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The run exited 2 with exactly one error line and no traceback: that line."""
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("aioseed: error: ")]
    assert len(errors) == 1, result.stderr[-3000:]
    return errors[0]


def only_line(result: subprocess.CompletedProcess) -> str:
    """As ``one_error_line``, for mistakes found before anything starts: stderr is that line alone."""
    line = one_error_line(result)
    assert result.stderr.strip() == line, result.stderr[-3000:]
    return line


def test_an_unknown_env_id_names_the_close_matches() -> None:
    assert "unknown env 'CartPol-v1'; did you mean CartPole-v1" in only_line(aioseed("run", "--learner.env", "CartPol-v1"))
    assert "did you mean ALE/Pong-v5" in only_line(aioseed("actor", "--env", "ALE/Pongg-v5"))
    line = only_line(aioseed("learner", "--env", "football:academy_empty_goal_clos"))
    assert "unknown football scenario 'academy_empty_goal_clos'; did you mean academy_empty_goal_close" in line


def test_an_env_that_cannot_be_made_or_served_says_why_in_one_line() -> None:
    """Each of these used to end in a traceback (the fleet's from inside Ray)."""
    assert "did you mean CartPole-v1" in only_line(aioseed("actors", "--actor.env", "CartPol-v1"))
    line = one_error_line(aioseed("actor", "--env-backend", "envpool", "--env", "Taxi-v4", "--learner", "127.0.0.1:1"))
    assert "--env-backend envpool has no 'Taxi-v4'" in line
    line = one_error_line(aioseed("learner", "--env", "CartPole-v1", "--env-kwargs", '{"lenght": 4}', "--server.port", "0"))
    assert "env_kwargs {'lenght': 4} do not fit CartPole-v1" in line and "unexpected keyword argument 'lenght'" in line
    line = one_error_line(aioseed("learner", "--env", "tests.envs.corridor:TextCorridor-v0", "--server.port", "0"))
    assert "aioseed serves Box observations" in line and "this env has Text(" in line


def test_an_unknown_preset_and_a_renamed_config_key_name_what_to_use(tmp_path) -> None:
    assert "unknown preset 'atari-pp'; did you mean atari-ppo" in only_line(aioseed("run", "--preset", "atari-pp"))
    assert "--preset applies to run, learner and the benches that train a run" in only_line(aioseed("eval", "--preset", "atari"))
    assert "--config needs a value" in only_line(aioseed("run", "--config"))
    old = tmp_path / "old.toml"
    old.write_text("[learner]\nstop-after-seconds = 10\n")
    line = only_line(aioseed("run", "--config", str(old)))
    assert "learner.stop-after-seconds was renamed learner.stop.after-seconds" in line and "[learner.stop]" in line


def test_a_missing_or_incompatible_checkpoint_and_the_run_it_belongs_to_is_left_as_it_was(tmp_path) -> None:
    assert "nothing holds no config.toml: give the --logdir of a run" in only_line(aioseed("eval", "--logdir", str(tmp_path / "nothing")))
    logdir = tmp_path / "run"
    trained = aioseed(
        "run", "--learner.logdir", str(logdir), "--learner.stop.after-frames", "2000", "--learner.console.port", "0",
        "--num-actors", "1", "--envs-per-actor", "4",
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    saved = (logdir / "config.toml").read_text()
    other_network = aioseed(
        "learner", "--logdir", str(logdir), "--impala.hidden-sizes", "32", "--server.port", "0", "--console.port", "0"
    )
    line = one_error_line(other_network)
    assert f"checkpoint {logdir}/checkpoints/ckpt-" in line and "does not fit this learner" in line
    assert (logdir / "config.toml").read_text() == saved  # the run's own config is not overwritten
    # Another env of the same shapes (obs [4], 2 actions) used to go on silently as the CartPole run.
    other_env = aioseed(
        "learner", "--logdir", str(logdir), "--env", "tests.envs.corridor:Corridor-v0", "--env-kwargs", '{"length": 4}',
        "--server.port", "0", "--console.port", "0",
    )
    line = one_error_line(other_env)
    assert f"{logdir} holds a run of CartPole-v1, not tests.envs.corridor:Corridor-v0" in line and "--learner.logdir" in line
    assert (logdir / "config.toml").read_text() == saved
    line = only_line(aioseed("eval", "--logdir", str(logdir), "--protocol", "seed"))
    assert "--protocol seed evaluates Atari (ALE/ ids); CartPole-v1 is not one: use --protocol none" in line
    line = one_error_line(aioseed("eval", "--logdir", str(logdir), "--device", "/XPU:0"))
    assert "cannot read device '/XPU:0'" in line

    # A damaged checkpoint: one line naming the file and what is wrong with it (before: IndexError's traceback, exit 1).
    latest = max((logdir / "checkpoints").glob("ckpt-*.index"), key=lambda p: int(p.name[5:-6])).with_suffix("")
    data = latest.with_name(latest.name + ".data-00000-of-00001")
    data.write_bytes(data.read_bytes()[:10])
    for command in (("eval", "--logdir"), ("serve", "--server.port", "0", "--console.port", "0", "--checkpoint")):
        line = one_error_line(aioseed(*command, str(logdir)))
        assert f"{data} is truncated or damaged (Read less bytes than requested)" in line, line
    with pytest.raises(UserError, match=f"{data} is truncated or damaged"):
        load_policy(logdir)
    (logdir / "checkpoints" / "checkpoint").write_bytes(b"\xff\xfe garbage")
    line = one_error_line(aioseed("learner", "--logdir", str(logdir), "--server.port", "0", "--console.port", "0"))
    assert f"{logdir}/checkpoints/checkpoint is damaged or not a checkpoint state file" in line


def test_runs_a_report_cannot_compare_or_group_say_why(tmp_path) -> None:
    a_run(tmp_path / "mixed", "a", "CartPole-v1", 0, 1e-3, [500.0])
    a_run(tmp_path / "mixed", "b", "aioseed/Catch-v0", 0, 1e-3, [1.0])
    assert "have no common scale" in only_line(aioseed("report", str(tmp_path / "mixed")))
    line = only_line(aioseed("report", str(tmp_path / "mixed" / "a"), "--group-by", "host"))
    assert "--group-by host: ambiguous: learner.console.host, learner.server.host" in line


def test_a_taken_port_a_missing_token_file_and_a_key_of_another_certificate(tmp_path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        line = one_error_line(aioseed("learner", "--server.host", "127.0.0.1", "--server.port", str(port), "--console.port", "0"))
        assert f"cannot listen on 127.0.0.1:{port}" in line and "--server.port 0 picks a free port" in line
    line = one_error_line(aioseed("learner", "--server.token-file", str(tmp_path / "token"), "--server.port", "0", "--console.port", "0"))
    assert f"--server.token-file {tmp_path / 'token'}: no such file" in line
    assert f"--token-file {tmp_path / 'token'}: no such file" in one_error_line(aioseed("actor", "--token-file", str(tmp_path / "token")))
    (tmp_path / "tokens").write_text("alice a-long-enough-token-1234\nbob short\n")
    line = one_error_line(aioseed("learner", "--console.tokens-file", str(tmp_path / "tokens"), "--server.port", "0", "--console.port", "0"))
    assert f"--console.tokens-file {tmp_path / 'tokens'} line 2: bob's token is shorter than 16 characters" in line
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cert, _ = self_signed(tmp_path / "a")
    _, other_key = self_signed(tmp_path / "b")
    line = one_error_line(aioseed(
        "learner", "--server.port", "0", "--console.port", "0", "--server.tls-cert", str(cert), "--server.tls-key", str(other_key)
    ))
    assert f"--server.tls-key {other_key} is not the private key of --server.tls-cert {cert}" in line


def test_a_bug_of_aioseeds_keeps_its_traceback(monkeypatch) -> None:
    def broken(command: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "dispatch", broken)
    monkeypatch.setattr(cli.logging_setup, "configure", lambda *args, **kwargs: None)  # the other tests' logging stays as it is
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["actor"])


pytestmark = pytest.mark.e2e
