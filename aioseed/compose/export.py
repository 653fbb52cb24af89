"""A trained V-trace policy for use without aioseed: a TensorFlow SavedModel (``aioseed eval --export``) and
ONNX, converted from it by tf2onnx (``aioseed eval --onnx``; ``pip install 'aioseed[onnx]'``)."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING

import structlog

from aioseed.errors import InvalidInput

if TYPE_CHECKING:
    from aioseed.algos.agent import Agent

log = structlog.get_logger()

ONNX_SIGNATURE = "greedy"
"""The SavedModel signature ONNX gets: the most likely action, with the logits (to sample from) and the value."""


def check(agent: Agent, onnx: bool) -> None:
    """Refuses what cannot be exported (InvalidInput): an evaluation calls it before it runs its episodes."""
    if agent.uses_replay:
        raise InvalidInput("--export and --onnx write V-trace policies; R2D2's, SAC's and TD3's networks are not exported yet")
    if onnx and importlib.util.find_spec("tf2onnx") is None:
        raise InvalidInput("--onnx needs tf2onnx: pip install 'aioseed[onnx]'")


def saved_model(agent: Agent, path: pathlib.Path) -> pathlib.Path:
    """Writes the policy with signatures ``serving_default`` (sampled actions) and ``greedy``."""
    import tensorflow as tf

    check(agent, onnx=False)
    tf.saved_model.save(agent.policy, str(path), signatures={"serving_default": agent.policy.act, "greedy": agent.policy.greedy})
    log.info("policy_exported", path=str(path))
    return path


def onnx(agent: Agent, path: pathlib.Path, saved: pathlib.Path | None = None) -> pathlib.Path:
    """Writes the greedy policy as ONNX (inputs: observations, then the recurrent state if any; outputs: action,
    logits, value, next state), from the SavedModel at ``saved`` or from one written to a temporary directory."""
    check(agent, onnx=True)
    with tempfile.TemporaryDirectory() as scratch:
        source = saved or saved_model(agent, pathlib.Path(scratch) / "policy")
        # In its own process: tf2onnx loads the SavedModel with its own graph settings.
        command = [sys.executable, "-m", "tf2onnx.convert", "--saved-model", str(source), "--signature_def", ONNX_SIGNATURE,
                   "--output", str(path)]
        done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"tf2onnx failed ({done.returncode}): {done.stderr[-2000:]}")
    log.info("policy_exported_onnx", path=str(path))
    return path
