"""Users' own environments: ``module:id`` imports the module that registers the id, ``env_kwargs`` reach
the constructor, and spaces aioseed cannot serve get an error naming them."""

from __future__ import annotations

import numpy as np
import pytest
from tests.processes import Process, run_to_return

from aioseed.action_space import MultiDiscrete
from aioseed.envs.registry import env_spec, make_vector_env
from aioseed.envs.rendering import first_frame, rendering_vector_env

CORRIDOR = "tests.envs.corridor:Corridor-v0"
TWINS = "tests.envs.corridor:TwinCorridors-v0"


def test_module_id_imports_the_module_and_kwargs_reach_the_constructor() -> None:
    envs = make_vector_env(CORRIDOR, 2, kwargs={"length": 3})
    observations, _ = envs.reset(seed=0)
    assert observations.shape == (2, 3)
    _, rewards, terminated, _, _ = envs.step(np.ones(2, np.int64))  # cell 1
    _, rewards, terminated, _, _ = envs.step(np.ones(2, np.int64))  # cell 2, the end of length 3
    assert terminated.all() and (rewards == 1.0).all()  # after -0.01 for the first step
    envs.close()
    spec = env_spec(CORRIDOR, kwargs={"length": 5})
    assert (spec.observation_shape, spec.observation_dtype, spec.num_actions) == ((5,), "float32", 2)


def test_a_module_id_renders_in_a_spawned_process_that_imports_its_module() -> None:
    """``aioseed eval --video`` steps the envs in a fresh process when TensorFlow is loaded: it must register the id too."""
    envs = rendering_vector_env(TWINS, 1, in_subprocess=True)
    try:
        envs.reset(seed=0)
        assert first_frame(envs).ndim == 3  # before: the spawned process knew no TwinCorridors-v0 and died
    finally:
        envs.close()


def test_spaces_aioseed_cannot_serve_are_named() -> None:
    with pytest.raises(TypeError, match=r"env tests.envs.corridor:TextCorridor-v0: aioseed serves Box observations .*, this env has Text\("):
        env_spec("tests.envs.corridor:TextCorridor-v0")


def test_dict_observations_are_flattened_and_multidiscrete_actions_served() -> None:
    spec = env_spec(TWINS)
    assert spec.observation_shape == (8,) and spec.action_space == MultiDiscrete((2, 2))
    envs = make_vector_env(TWINS, 1)
    observations, _ = envs.reset(seed=0)
    np.testing.assert_array_equal(observations[0], [1, 0, 0, 0, 1, 0, 0, 0])  # one-hot "left", then "right"
    observations, *_ = envs.step(np.array([[1, 0]]))
    np.testing.assert_array_equal(observations[0], [0, 1, 0, 0, 1, 0, 0, 0])
    envs.close()


async def test_run_learns_an_env_with_dict_observations_and_multidiscrete_actions(tmp_path) -> None:
    log, _, mean_return = await run_to_return(
        [
            "--num-actors", "1", "--envs-per-actor", "8", "--envs-per-message", "8",
            "--learner.env", TWINS, "--learner.logdir", str(tmp_path), "--learner.console.port", "0",
            "--learner.stop.at-return", "0.9", "--learner.stop.after-frames", "200000",
            "--learner.return-window", "20", "--learner.seed", "0",
        ],
        timeout_s=180,
    )
    assert "MultiDiscrete[2,2] actions" in log
    assert mean_return >= 0.9  # both walkers walk right: 0.98 at best, a random pair rarely arrives


async def test_run_trains_on_an_env_from_a_module_with_kwargs(tmp_path) -> None:
    run = await Process(
        [
            "run", "--num-actors", "1", "--envs-per-actor", "8", "--envs-per-message", "8",
            "--learner.env", CORRIDOR, "--learner.env-kwargs", '{"length": 4}',
            "--learner.logdir", str(tmp_path), "--learner.console.port", "0", "--learner.log-every-s", "1",
            "--learner.stop.at-return", "0.97", "--learner.stop.after-frames", "200000",
            "--learner.return-window", "20", "--learner.seed", "0",
        ]
    ).start()
    try:
        assert await run.wait(timeout_s=180) == 0, run.log
    finally:
        run.kill()
    assert run.errors() == [], run.log
    stop = await run.wait_for_line(r"stop_condition frames=(\d+) mean_return=([\d.]+) reason=(\w+)")
    # The straight walk of Corridor(4) returns 0.98 (random walks ~0.92); at the default length 8 no
    # policy returns over 0.94: the kwargs reached the envs, and the agent learned to walk right.
    assert stop.group(3) == "return" and float(stop.group(2)) >= 0.97, run.log
