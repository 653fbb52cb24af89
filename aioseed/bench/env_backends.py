"""``aioseed bench env-backends``: one env under each backend (ale-py / gfootball / gymnasium against
EnvPool). Fidelity: a fixed policy's mean return under each, with its standard error and Welch's test
of the difference. Speed: env steps per second of wall time and per CPU-second of this process (every
backend's threads run in it), timed around the env's steps only."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from aioseed.bench.config import EnvBackendsBench
from aioseed.envs.atari import AtariConfig
from aioseed.envs.registry import make_vector_env
from aioseed.errors import MissingFile

Policy = Callable[[np.ndarray], np.ndarray]


def random_policy(action_space: Any, seed: int) -> Policy:
    """Uniform actions from a seeded generator: the same policy under every backend."""
    rng = np.random.default_rng(seed)
    if hasattr(action_space, "n"):
        return lambda obs: rng.integers(0, action_space.n, len(obs))
    low, high = action_space.low, action_space.high
    return lambda obs: rng.uniform(low, high, (len(obs), *low.shape)).astype(np.float32)


def checkpoint_policy(logdir: Any, env_id: str, envs: Any) -> Policy:
    """The run's latest checkpoint, sampling its actions (a feed-forward policy)."""
    from aioseed.algos.agent import zero_state
    from aioseed.compose import config_file
    from aioseed.compose.devices import place
    from aioseed.compose.learner import build_agent
    from aioseed.envs.registry import vector_env_spec
    from aioseed.server.training.checkpoint import Checkpointer
    from aioseed.types import env_actions

    saved = config_file.saved_learner(logdir)
    agent = build_agent(saved, vector_env_spec(env_id, envs, saved.atari), place("auto"))
    if Checkpointer(logdir / "checkpoints", agent.checkpoint_objects()).restore() is None:
        raise MissingFile(f"no checkpoint under {logdir / 'checkpoints'}")
    state = zero_state(agent.state_columns(), envs.num_envs)
    if state:
        raise ValueError("--logdir: the bench runs feed-forward policies (this one has a recurrent state)")
    evaluation = np.zeros(envs.num_envs, bool)
    return lambda obs: env_actions(agent.infer(obs, state, evaluation=evaluation)[0])


def measure(bench: EnvBackendsBench, backend: str) -> dict[str, Any]:
    atari = AtariConfig()
    envs = make_vector_env(bench.env, bench.envs, atari, backend=backend)  # type: ignore[arg-type]
    try:
        policy = checkpoint_policy(bench.logdir, bench.env, envs) if bench.logdir else random_policy(envs.single_action_space, bench.seed)
        observations, _ = envs.reset(seed=bench.seed)
        per_env = -(-bench.episodes // bench.envs)  # each env's first episodes: no bias towards short ones
        totals, ended = np.zeros(bench.envs), [[] for _ in range(bench.envs)]
        wall = cpu = 0.0
        steps = 0
        while min(map(len, ended)) < per_env and steps < bench.max_steps:
            actions = policy(observations)
            started, started_cpu = time.perf_counter(), time.process_time()
            observations, rewards, terminated, truncated, _ = envs.step(actions)
            wall, cpu = wall + time.perf_counter() - started, cpu + time.process_time() - started_cpu
            steps += 1
            totals += rewards
            for i in np.flatnonzero(terminated | truncated):
                ended[i].append(float(totals[i]))
                totals[i] = 0.0
    finally:
        envs.close()
    returns = [r for env_returns in ended for r in env_returns[:per_env]]
    sem = float(np.std(returns, ddof=1) / math.sqrt(len(returns))) if len(returns) > 1 else math.nan
    env_steps = steps * bench.envs
    return {
        "backend": backend, "episodes": len(returns), "mean_return": float(np.mean(returns)) if returns else math.nan,
        "sem": sem, "env_steps": env_steps, "steps_per_s": env_steps / max(wall, 1e-9), "steps_per_cpu_s": env_steps / max(cpu, 1e-9),
    }


def welch(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    """The difference of two backends' mean returns, its standard error, and Welch's two-sided p-value."""
    from scipy import stats

    difference = a["mean_return"] - b["mean_return"]
    error = math.hypot(a["sem"], b["sem"])
    if error == 0:
        return {"difference": difference, "se": 0.0, "p": 1.0 if difference == 0 else 0.0}
    t = difference / error
    dof = error**4 / (a["sem"] ** 4 / (a["episodes"] - 1) + b["sem"] ** 4 / (b["episodes"] - 1))
    return {"difference": difference, "se": error, "p": float(2 * stats.t.sf(abs(t), dof))}


def main(bench: EnvBackendsBench) -> int:
    rows = [measure(bench, backend) for backend in bench.backends]
    result: dict[str, Any] = {"env": bench.env, "policy": str(bench.logdir or "random"), "envs": bench.envs, "backends": rows}
    if len(rows) == 2:
        result["difference"] = welch(rows[1], rows[0])
    if bench.json:
        print(json.dumps(result), flush=True)
        return 0
    print(f"{bench.env}: policy {result['policy']}, {bench.envs} envs, {bench.episodes} episodes per backend")
    print(f"{'backend':<10}{'episodes':>9}{'mean return':>14}{'sem':>8}{'env steps/s':>13}{'per CPU-s':>11}")
    for row in rows:
        print(
            f"{row['backend']:<10}{row['episodes']:>9}{row['mean_return']:>14.2f}{row['sem']:>8.2f}"
            f"{row['steps_per_s']:>13.0f}{row['steps_per_cpu_s']:>11.0f}"
        )
    if "difference" in result:
        d = result["difference"]
        print(f"{rows[1]['backend']} - {rows[0]['backend']}: {d['difference']:+.2f} +- {d['se']:.2f} (Welch p = {d['p']:.2f})")
    return 0
