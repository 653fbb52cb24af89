"""The learner's composition root: config -> env spec, agent, checkpoints -> ``Learner``.

``build`` is what ``aioseed learner``, ``aioseed run``, the benchmarks and the tests call.
"""

from __future__ import annotations

import dataclasses
import json

import structlog

from aioseed.algos.agent import Agent
from aioseed.envs.atari import is_atari
from aioseed.envs.registry import env_spec
from aioseed.server.config import LearnerConfig
from aioseed.server.learner import Learner
from aioseed.spec import EnvSpec

log = structlog.get_logger()


def resolve_device(flag: str) -> str:
    """auto -> the first GPU when TensorFlow sees one, else the CPU."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    match flag.lower():
        case "auto":
            return "/GPU:0" if gpus else "/CPU:0"
        case "cpu":
            return "/CPU:0"
        case "gpu":
            if not gpus:
                raise ValueError("--device gpu: TensorFlow sees no GPU")
            return "/GPU:0"
        case _:
            return flag


def save_run_config(config: LearnerConfig) -> None:
    """Writes logdir/config.json so that ``aioseed eval`` can rebuild the agent."""
    if config.logdir is None:
        return
    config.logdir.mkdir(parents=True, exist_ok=True)
    (config.logdir / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2, default=str))


def learner_specs(config: LearnerConfig) -> tuple[EnvSpec, EnvSpec]:
    """(what actors send, what the policy sees): they differ with learner-side frame stacking."""
    stack = config.learner_frame_stack
    if stack == 1:
        spec = env_spec(config.env, config.atari, config.football)
        return spec, spec
    if not is_atari(config.env):
        raise ValueError(f"learner_frame_stack needs an ALE/ env, got {config.env}")
    wire = env_spec(config.env, dataclasses.replace(config.atari, stack=1))
    return wire, dataclasses.replace(wire, observation_shape=(stack, *wire.observation_shape[1:]))


def build_agent(config: LearnerConfig, spec: EnvSpec, device: str) -> Agent:
    """The agent ``config.agent`` names, for the observations the policy sees."""
    if config.agent == "r2d2":
        from aioseed.algos.r2d2.agent import R2D2Agent

        return R2D2Agent(spec, config.r2d2, device=device)
    from aioseed.algos.impala.agent import ImpalaAgent

    return ImpalaAgent(spec, config.vtrace, device=device, seed=config.seed)


def build(config: LearnerConfig) -> Learner:
    """Spec from the env, the V-trace agent on the chosen device, checkpoints, the learner."""
    import tensorflow as tf

    from aioseed.server.checkpoint import Checkpointer

    if config.seed is not None:
        tf.random.set_seed(config.seed)
    spec, seen = learner_specs(config)
    device = resolve_device(config.device)
    agent = build_agent(config, seen, device)
    checkpointer = None
    if config.logdir is not None:
        save_run_config(config)
        checkpointer = Checkpointer(config.logdir / "checkpoints", agent.checkpoint_objects())
    log.info("learner_built", env=config.env, device=device, logdir=str(config.logdir))
    return Learner(config, spec, agent, checkpointer)
