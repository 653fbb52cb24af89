"""The command line: presets are a starting point that the other flags override."""

from __future__ import annotations

import pytest

from aioseed.cli import parse
from aioseed.commands.run import RunConfig


def test_run_preset_sets_the_football_academy_and_flags_given_override_it() -> None:
    run = parse(["run", "--envs-per-actor", "4", "--preset", "football-academy", "--learner.impala.learning-rate", "1e-3"])
    assert isinstance(run, RunConfig) and run.preset == "football-academy"
    assert run.learner.env == "football:academy_empty_goal_close" and run.learner.stop.at_return == 0.9
    # EnvPool's port of the engine steps the actors' envs: nothing to build.
    assert (run.learner.football.representation, run.env_backend, run.learner.impala.network) == ("extracted", "envpool", "football_resnet")
    assert (run.envs_per_actor, run.learner.impala.learning_rate) == (4, 1e-3)  # given flags win over the preset
    assert run.learner.training.unroll_length == 32  # the preset's value where no flag was given
    actor = run.actor_config(port=1234, index=0)
    assert (actor.env, actor.football, actor.env_backend) == (run.learner.env, run.learner.football, "envpool")  # the same env
    simple = parse(["run", "--preset", "football-academy-simple115"])
    assert (simple.learner.football.representation, simple.env_backend) == ("simple115v2", "default")


def test_the_smm_preset_uses_seeds_football_network_on_the_stacked_map() -> None:
    run = parse(["run", "--preset", "football-academy-smm"])
    assert (run.learner.football.representation, run.learner.football.stacked) == ("extracted", True)
    assert run.learner.impala.network == "football_resnet"


def test_without_a_preset_run_trains_cartpole() -> None:
    run = parse(["run"])
    assert run == RunConfig()


def test_atari_and_catch_presets_and_an_evaluation_actor() -> None:
    atari = parse(["run", "--preset", "atari", "--learner.env", "ALE/Breakout-v5", "--evaluation-envs", "2"])
    assert atari.learner.env == "ALE/Breakout-v5" and atari.learner.impala.network == "nature_cnn"
    assert atari.learner.learner_frame_stack == 4 and atari.learner.impala.reward_clipping == "abs"
    assert atari.learner.impala.reuses_samples and atari.learner.impala.targets == "vtrace"
    actors = atari.actor_configs(port=1234)
    assert [a.evaluation for a in actors] == [False, False, True]
    assert (actors[-1].num_envs, actors[-1].envs_per_message, actors[-1].atari.stack) == (2, 2, 1)
    catch = parse(["run", "--preset", "catch"])
    assert catch.learner.env == "aioseed/Catch-v0" and catch.learner.stop.at_return == 0.9


def test_the_learners_flat_flags_of_earlier_versions_map_to_their_sections() -> None:
    old = parse(["learner", "--host", "127.0.0.1", "--port=0", "--max_streams", "9", "--no-console", "--console-port", "0",
                 "--stop-at-return", "5", "--device", "cpu"])
    new = parse(["learner", "--server.host", "127.0.0.1", "--server.port", "0", "--server.max-streams", "9",
                 "--console.no-enabled", "--console.port", "0", "--stop.at-return", "5", "--devices", "cpu"])
    assert old == new and new.server.max_streams == 9 and not new.console.enabled and new.stop.at_return == 5
    assert new.devices == "cpu" and new.inference_devices == "same"
    run = parse(["run", "--learner.port", "7", "--learner.stop-after-frames", "100", "--learner.agent", "vtrace",
                 "--learner.vtrace.entropy-cost", "0.5", "--learner.vtrace.lambda_", "0.9"])
    assert (run.learner.server.port, run.learner.stop.after_frames) == (7, 100)
    assert (run.learner.agent, run.learner.impala.entropy_cost, run.learner.impala.lambda_) == ("impala", 0.5, 0.9)
    assert parse(["actor", "--token", "x"]).token == "x"  # other commands' flags are left alone


def test_impala_mode_from_the_command_line_and_the_combinations_it_refuses() -> None:
    from aioseed.clients.actor import ActorConfig
    from aioseed.compose.config import LearnerConfig

    learner = parse(["learner", "--architecture", "impala"])
    assert isinstance(learner, LearnerConfig) and learner.architecture == "impala"
    actor = parse(["actor", "--architecture", "impala", "--envs-per-message", "1", "--policy-threads", "2"])
    assert isinstance(actor, ActorConfig) and (actor.architecture, actor.envs_per_message, actor.policy_threads) == ("impala", 1, 2)
    run = parse(["run", "--architecture", "impala"])
    assert run.served_learner.architecture == "impala"
    assert all(a.architecture == "impala" for a in run.actor_configs(port=1234))
    for bad in (
        ["learner", "--architecture", "impala", "--agent", "r2d2"],
        ["learner", "--architecture", "impala", "--learner-frame-stack", "4"],
        ["actor", "--architecture", "impala", "--evaluation"],
        ["run", "--architecture", "impala", "--evaluation-envs", "2"],
        ["run", "--architecture", "impala", "--launcher", "ray"],
        ["run", "--architecture", "impala", "--learner.training.acting", "bounded"],  # refused by the served learner
        ["actors", "--actor.architecture", "impala"],
        ["learner", "--architecture", "impala", "--env", "football:academy_3_vs_1_with_keeper", "--football.right-players", "1"],
        ["learner", "--architecture", "impala", "--env", "ALE/Pong-v5", "--atari.episodic-life"],
        ["actor", "--architecture", "impala", "--env", "ALE/Pong-v5", "--atari.episodic-life"],
    ):
        with pytest.raises((ValueError, SystemExit)):
            parse(bad)
    # Uploads say neither which side a row plays nor where a life was lost: the learner's returns would be wrong.
    from aioseed.envs.atari import AtariConfig
    from aioseed.envs.football import FootballConfig

    with pytest.raises(ValueError, match="keeps no sides"):
        LearnerConfig(architecture="impala", env="football:academy_3_vs_1_with_keeper", football=FootballConfig(right_players=1))
    for config in (LearnerConfig, ActorConfig):
        with pytest.raises(ValueError, match="carry no lost lives"):
            config(architecture="impala", env="ALE/Pong-v5", atari=AtariConfig(episodic_life=True))


def test_version_prints_the_package_version(capsys) -> None:
    from importlib.metadata import version

    from aioseed import __version__
    from aioseed.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"aioseed {__version__}\n"
    assert version("aioseed") == __version__  # the installed metadata reads the same attribute


def test_the_football_ppo_preset_trains_every_players_row_once_per_synchronous_batch() -> None:
    run = parse(["run", "--preset", "football-academy-ppo"])
    learner = run.learner
    assert (learner.football.left_players, learner.football.right_players, learner.football.rewards) == (3, 0, "scoring,checkpoints")
    training, impala = learner.training, learner.impala
    assert (training.acting, training.unroll_length) == ("synchronous", 64)
    # Synchronous acting closes a batch once every row has given one unroll: games x players rows.
    assert training.batch_size == run.num_actors * run.envs_per_actor * learner.football.left_players == 48
    assert (impala.targets, impala.epochs, impala.minibatches, impala.minibatch, impala.ppo_clip) == ("gae", 10, 4, "transitions", 0.2)


def test_the_ppo_and_noframeskip_presets_and_the_acting_modes_they_allow() -> None:
    ppo = parse(["run", "--preset", "atari-ppo"])
    assert (ppo.num_actors, ppo.envs_per_actor, ppo.envs_per_message) == (1, 8, 8)
    training, impala = ppo.learner.training, ppo.learner.impala
    assert (training.acting, training.unroll_length, training.batch_size) == ("synchronous", 128, 8)
    assert (impala.init, impala.minibatch, impala.targets, impala.epochs, impala.minibatches) == ("orthogonal", "transitions", "gae", 4, 4)
    assert ppo.learner.atari.sticky_action_probability == 0.0 and ppo.learner.atari.noop_max == 30
    plain = parse(["run", "--preset", "atari-noframeskip"])
    assert plain.learner.atari.sticky_action_probability == 0.0 and plain.learner.training.acting == "async"
    assert parse(["run", "--preset", "atari"]).learner.atari.sticky_action_probability == 0.25  # v5 stays the headline
    assert parse(["learner", "--training.acting", "bounded"]).training.acting == "bounded"
    for bad in (
        ["learner", "--agent", "r2d2", "--training.acting", "synchronous"],
        ["learner", "--architecture", "impala", "--training.acting", "bounded"],
        ["learner", "--impala.minibatch", "transitions", "--impala.lstm-size", "8"],
        ["learner", "--precision", "float16"],
    ):
        with pytest.raises((ValueError, SystemExit)):
            parse(bad)


def test_the_fast_preset_is_atari_ppo_at_the_machines_speed() -> None:
    """atari-fast keeps atari-ppo's protocol and loss and changes only what sets the speed (issue 56)."""
    ppo, fast = parse(["run", "--preset", "atari-ppo"]), parse(["run", "--preset", "atari-fast"])
    assert fast.learner.precision == "bfloat16" and fast.learner.training.acting == "bounded"
    # CleanRL's PPO starts each batch from what acted it (atari-ppo's synchronous acting makes the two the same).
    assert fast.learner.impala.proximal == "behaviour" and fast.num_actors == 1 and fast.envs_per_message == 32
    assert fast.learner.atari == ppo.learner.atari and fast.learner.env == ppo.learner.env
    same = ("init", "targets", "lambda_", "minibatch", "ppo_clip", "entropy_cost", "baseline_cost", "max_grad_norm", "normalize_advantages")
    assert all(getattr(fast.learner.impala, name) == getattr(ppo.learner.impala, name) for name in same)
    envs = fast.num_actors * fast.envs_per_actor
    assert fast.learner.training.batch_size == envs and fast.envs_per_message == fast.envs_per_actor  # each env one unroll a batch
    transitions = envs * fast.learner.training.unroll_length
    updates = fast.learner.impala.epochs * fast.learner.impala.minibatches
    assert updates / transitions == 16 / 1024  # atari-ppo's updates per transition


@pytest.mark.parametrize("flag,value", [("--num-actors", "0"), ("--envs-per-actor", "0"), ("--envs-per-message", "0"), ("--evaluation-envs", "-1")])
def test_aioseed_run_refuses_counts_that_cannot_work_before_anything_starts(flag: str, value: str, capsys) -> None:
    """They used to fail once TensorFlow and the learner were up (a traceback), or hang (no actors)."""
    from aioseed.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["run", flag, value])
    assert exited.value.code == 2 and "must be >= 1" in " ".join(capsys.readouterr().err.replace("│", " ").split())


def test_the_env_id_is_checked_here_only_where_this_machine_makes_the_env() -> None:
    """A remote Ray cluster's workers may have env packages this machine lacks: its fleet's id is theirs to check."""
    from aioseed.cli import _env_id

    assert _env_id(parse(["actors", "--actor.env", "ALE/Pong-v5"])) == "ALE/Pong-v5"
    assert _env_id(parse(["actors", "--ray", "HEAD:6379", "--actor.env", "my_envs:Robot-v0"])) is None
    assert _env_id(parse(["run", "--learner.env", "Acrobot-v1"])) == "Acrobot-v1"
