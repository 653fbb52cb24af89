"""A non-editable install from a built wheel: every module ships, and the learner serves the console page."""

from __future__ import annotations

import pathlib
import shutil
import signal
import subprocess
import sys
import zipfile

import aiohttp
import pytest

from tests.processes import ENV, Process

ROOT = pathlib.Path(__file__).resolve().parents[1]
COPY_IGNORE = shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "test-output", "logs", "__pycache__", ".pytest_cache")

pytestmark = pytest.mark.e2e


def build_and_install(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """Builds the wheel from a copy of the checkout (web/node_modules included, as ``make`` leaves it) and
    installs it, without dependencies, into a target directory; returns (wheel, target)."""
    source, dist, site = tmp_path / "source", tmp_path / "dist", tmp_path / "site"
    shutil.copytree(ROOT, source, ignore=COPY_IGNORE)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(source)], check=True, timeout=300, capture_output=True)
    (wheel,) = dist.glob("aioseed-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)], check=True, timeout=300, capture_output=True)
    return wheel, site


async def test_the_wheel_ships_every_module_and_serves_the_console(tmp_path) -> None:
    wheel, site = build_and_install(tmp_path)
    shipped = set(zipfile.ZipFile(wheel).namelist())
    modules = {path.relative_to(ROOT).as_posix() for path in (ROOT / "aioseed").rglob("*.py")}
    assert modules <= shipped, f"missing from the wheel: {sorted(modules - shipped)}"
    assert {"aioseed/web/index.html", "aioseed/web/console.js", "aioseed/web/node_modules/uplot/dist/uPlot.iife.min.js"} <= shipped
    presets = {path.relative_to(ROOT).as_posix() for path in (ROOT / "aioseed/presets").glob("*.toml")}
    assert presets and presets <= shipped
    assert "aioseed/results/atari_scores.csv" in shipped  # aioseed report's human-normalised scores

    # Outside the checkout, with the installed copy first on the path, aioseed is the wheel's.
    env = {"PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "import aioseed.console.server as s; print(s.__file__); print(s.WEB)"],
        cwd=tmp_path, env={**ENV, **env}, capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()
    assert where == [str(site / "aioseed/console/server.py"), str(site / "aioseed/web")]

    args = ["learner", "--server.host", "127.0.0.1", "--server.port", "0", "--console.port", "0", "--logdir", str(tmp_path / "run")]
    learner = await Process(args, env=env, cwd=str(tmp_path)).start()
    try:
        url = (await learner.wait_for_line(r"console_listening url='?(http://[^#' ]+)")).group(1).rstrip("/")
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{url}/") as page:
                assert page.status == 200 and "/static/console.js" in await page.text()
            async with http.get(f"{url}/static/console.js") as script:
                assert script.status == 200 and "train/skipped_nonfinite" in await script.text()
            async with http.get(f"{url}/vendor/uplot/uPlot.iife.min.js") as chart:
                assert chart.status == 200 and "uPlot" in await chart.text()
        learner.signal(signal.SIGTERM)
        assert await learner.wait() == 0
        assert learner.errors() == [], learner.log
    finally:
        learner.kill()
