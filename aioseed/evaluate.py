"""``aioseed eval``: run the latest checkpoint locally; optionally export a SavedModel."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys

import numpy as np
import structlog

from aioseed import config_file

log = structlog.get_logger()


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Evaluate a learner's latest checkpoint."""

    logdir: pathlib.Path = pathlib.Path("logs/cartpole")
    """The learner's logdir (holds config.json and checkpoints/)."""
    env: str | None = None
    """Gymnasium id to evaluate on (default: the env the learner trained on)."""
    episodes: int = 10
    """Episodes to run."""
    greedy: bool = False
    """Take the most likely action instead of sampling."""
    seed: int | None = 0
    """Seed of the first episode; episode i uses seed + i."""
    export: pathlib.Path | None = None
    """Also write the policy as a TensorFlow SavedModel here (signatures serving_default and greedy)."""
    device: str = "auto"
    """TensorFlow device: auto (the first GPU, else the CPU), cpu, gpu or a name such as /GPU:1."""


def evaluate(config: EvalConfig) -> dict[str, float]:
    import tensorflow as tf

    from aioseed.algos.agent import zero_state
    from aioseed.algos.impala.agent import ImpalaAgent
    from aioseed.envs.registry import env_kwargs, make_vector_env, vector_env_spec
    from aioseed.devices import place
    from aioseed.server.checkpoint import Checkpointer

    saved = config_file.saved_learner(config.logdir)
    if saved.agent != "impala":
        raise ValueError(f"aioseed eval runs IMPALA (V-trace) policies; {config.logdir} trained {saved.agent}")
    agent_config = saved.impala
    env_id = config.env or saved.env
    atari = saved.atari
    if saved.learner_frame_stack > 1:  # the policy saw the learner's stacks
        atari = dataclasses.replace(atari, stack=saved.learner_frame_stack)
    env = make_vector_env(env_id, 1, atari, saved.football, env_kwargs(saved.env_kwargs))  # as trained
    spec = vector_env_spec(env_id, env, atari)
    agent = ImpalaAgent(spec, agent_config, place(config.device))
    progress = Checkpointer(config.logdir / "checkpoints", agent.checkpoint_objects()).restore()
    if progress is None:
        raise FileNotFoundError(f"no checkpoint under {config.logdir / 'checkpoints'}")
    act = agent.policy.greedy if config.greedy else agent.policy.act
    returns = []
    for episode in range(config.episodes):
        obs, _ = env.reset(seed=None if config.seed is None else config.seed + episode)
        state = list(zero_state(agent.state_columns(), 1).values())
        reward_input = [np.zeros(1, np.float32)] if agent_config.previous_action_reward else []
        total, finished = 0.0, False
        while not finished:
            out = act(obs.astype(spec.dtype), *state, *reward_input)
            state = [out[name] for name in agent.policy.state_names]
            obs, reward, terminated, truncated, _ = env.step(out["action"].numpy())
            reward_input = [reward.astype(np.float32)] if agent_config.previous_action_reward else []
            total += float(reward[0])
            finished = bool(terminated[0] or truncated[0])
        returns.append(total)
    env.close()
    result = {
        "env": env_id,
        "episodes": config.episodes,
        "mean_return": float(np.mean(returns)),
        "std_return": float(np.std(returns)),
        "train_steps": progress.train_steps,
        "frames": progress.frames,
    }
    if config.export is not None:
        tf.saved_model.save(
            agent.policy,
            str(config.export),
            signatures={"serving_default": agent.policy.act, "greedy": agent.policy.greedy},
        )
        log.info("policy_exported", path=str(config.export))
        result["export"] = str(config.export)
    return result


def main(config: EvalConfig) -> int:
    result = evaluate(config)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0
