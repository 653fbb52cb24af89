"""Actor fleets on a local Ray instance against a real learner: `aioseed actors --ray local` connects,
Ray restarts a killed actor (a new process with fresh run_ids), the fleet stops on SIGINT or when
the learner is gone and leaves no process behind; `aioseed run --launcher ray` learns CartPole."""

from __future__ import annotations

import os
import pathlib
import re
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from tests.conftest import small_config
from tests.processes import CARTPOLE_TO_195, Process, run_to_return
from tests.waiting import until

RAY_PROCESSES = ("raylet", "gcs_server", "ray::", "default_worker.py", "dashboard/dashboard.py", "log_monitor.py")


def ray_processes() -> list[str]:
    """Command lines of Ray's processes (the cluster's daemons and its workers) on this machine."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(name in cmdline for name in RAY_PROCESSES):
            found.append(f"{entry.name}: {cmdline[:120]}")
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = pathlib.Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" not in status.read_text()


def fleet(port: int, *extra: str) -> Process:
    return Process(
        [
            "actors", "--ray", "local", "--num-actors", "2", "--cpus-per-actor", "0.5", "--no-dashboard",
            "--actor.learner", f"127.0.0.1:{port}", "--actor.num-envs", "4", "--actor.envs-per-message", "4",
            *extra,
        ],
        env={"RAY_DEDUP_LOGS": "0"},  # every actor's lines reach the fleet's log, even alike ones
    )


async def abort(process: Process) -> None:
    """After a failure: SIGINT (the fleet stops Ray), then SIGKILL if it hangs."""
    if process.proc is not None and process.proc.returncode is None:
        process.signal(signal.SIGINT)
        try:
            await process.wait(timeout_s=30)
        except TimeoutError:
            process.kill()


def member_pids(learner) -> dict[str, int]:
    """Fleet member -> its process id, from the names its streams gave the learner (ray-0@host:pid/0)."""
    pids = {}
    for stream in learner.actors():
        if match := re.match(r"(ray-\d+)@[^:]+:(\d+)/", stream["actor"]):
            pids[match.group(1)] = int(match.group(2))
    return pids


@pytest.fixture(autouse=True)
def no_ray_left() -> Iterator[None]:
    assert ray_processes() == [], "a Ray instance is already running here"
    yield
    if ray_processes():  # the test failed on them; leave the machine clean for the next one
        subprocess.run([str(pathlib.Path(sys.executable).with_name("ray")), "stop", "--force"], check=False, timeout=60)


async def test_a_killed_actor_is_restarted_by_ray_and_the_fleet_ends_with_its_learner(tmp_path, running_learner) -> None:
    async with running_learner(small_config(tmp_path, server={"slot_grace_s": 0.5})) as learner:
        actors = await fleet(learner.port, "--learner-gone-s", "2").start()
        try:
            await until(lambda: learner.connected_envs == 8 and len(member_pids(learner)) == 2, "2 actors x 4 envs", 9000)
            before = member_pids(learner)
            os.kill(before["ray-0"], signal.SIGKILL)  # the process dies; Ray starts another one
            await until(
                lambda: member_pids(learner).get("ray-0") not in (None, before["ray-0"]) and learner.connected_envs == 8,
                "ray-0 back in a new process", 9000,
            )
            after = member_pids(learner)
            assert after["ray-1"] == before["ray-1"]  # the other one carried on
            started = [
                await actors.wait_for_line(rf"fleet_member_started first_run_id=(\w+) member=ray-0 pid={pid}\b")
                for pid in (before["ray-0"], after["ray-0"])
            ]
            assert started[0].group(1) != started[1].group(1)  # fresh run_ids: the learner resets those envs' state
        except BaseException:
            await abort(actors)
            raise
    # The learner stopped: its health check fails, and after --learner-gone-s the fleet stops by itself.
    assert await actors.wait(timeout_s=60) == 0, actors.log
    assert "learner_gone" in actors.log and "fleet_stopped" in actors.log
    assert not any(alive(pid) for pid in (*before.values(), *after.values()))
    assert ray_processes() == []


async def test_sigint_stops_the_fleet_and_its_streams_end(tmp_path, running_learner) -> None:
    async with running_learner(small_config(tmp_path, server={"slot_grace_s": 0.5})) as learner:
        actors = await fleet(learner.port).start()
        try:
            await until(lambda: learner.connected_envs == 8, "2 actors x 4 envs", 9000)
            pids = member_pids(learner)
            actors.signal(signal.SIGINT)
            assert await actors.wait(timeout_s=60) == 0, actors.log
        finally:
            await abort(actors)
        await until(lambda: learner.connected_envs == 0, "the fleet's streams to end", 1000)
    assert actors.errors() == [], actors.log
    assert not any(alive(pid) for pid in pids.values())
    assert ray_processes() == []


async def test_run_with_the_ray_launcher_learns_cartpole(tmp_path) -> None:
    log, _, _ = await run_to_return(["--launcher", "ray", "--learner.logdir", str(tmp_path / "run"), *CARTPOLE_TO_195])
    assert re.search(r"fleet_started .*actors=2", log), log
    assert ray_processes() == []


async def test_a_member_whose_env_raises_is_restarted_and_the_fleet_goes_on(tmp_path, running_learner) -> None:
    """The env's exception reached the driver as a RayTaskError, which stopped every member with a traceback."""
    broken = "tests.envs.corridor:BrokenCorridor-v0"
    config = small_config(tmp_path, env=broken)
    async with running_learner(config) as learner:
        actors = await fleet(learner.port, "--actor.env", broken).start()
        try:
            restarted = r"fleet_member_started first_run_id=\w+ member=ray-0 pid=(\d+)"
            first = int((await actors.wait_for_line(restarted, timeout_s=120)).group(1))
            await until(
                lambda: len({int(p) for p in re.findall(restarted, "\n".join(actors.lines))} - {first}) > 0,
                "ray-0 restarted in a new process", 12000,
            )
            assert "the corridor's engine crashed" in "\n".join(actors.lines) and actors.proc.returncode is None  # it goes on
            actors.signal(signal.SIGINT)
            assert await actors.wait(timeout_s=60) == 0, actors.log
        finally:
            await abort(actors)
    assert ray_processes() == []


async def test_a_member_that_fails_past_its_restarts_is_given_up_and_the_fleet_exits_1(tmp_path, running_learner) -> None:
    """With no limit, an env that always raises restarted its member forever, and the fleet never said so."""
    broken = "tests.envs.corridor:BrokenCorridor-v0"
    async with running_learner(small_config(tmp_path, env=broken)) as learner:
        actors = await fleet(learner.port, "--actor.env", broken, "--max-restarts", "1").start()
        try:
            assert await actors.wait(timeout_s=240) == 1, actors.log
        finally:
            await abort(actors)
    given_up = re.findall(r"fleet_member_given_up .*error='?ActorDiedError'? max_restarts=1 member=(ray-\d)", actors.log)
    assert sorted(given_up) == ["ray-0", "ray-1"], actors.log
    assert ray_processes() == []
