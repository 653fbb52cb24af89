"""The set-up's apt steps, as make expands them."""

from __future__ import annotations

import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_apt_get_of_the_set_up_waits_for_the_dpkg_lock() -> None:
    """`make run` failed at once when another apt-get held the dpkg lock (issue 57)."""
    printed = subprocess.run(
        ["make", "-n", "-B", "/usr/bin/chromium", "/usr/lib/x86_64-linux-gnu/libOSMesa.so.8", ".venv/.football"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    calls = re.findall(r"apt-get[^;&|}\n]*", printed)
    assert len(calls) >= 6, printed  # update and install for Chromium, OSMesa and gfootball's build dependencies
    assert all("-o DPkg::Lock::Timeout=" in call for call in calls), calls
