"""A run resumed from its checkpoint carries on its tracked run (MLflow's SQLite store and W&B's offline mode, the
real clients): one run over all its sessions, where each session opened a run of its own."""

from __future__ import annotations

import pathlib

from aioseed.server.reporting.tracking import RUN_IDS, TrackerConfig, open_tracker, resumed_run_id

DOCUMENT = {"learner": {"env": "CartPole-v1", "seed": 1}, "num_actors": 1}


def checkpointed(logdir: pathlib.Path) -> None:
    """What a checkpoint leaves for the next session to resume (the manager's index file)."""
    (logdir / "checkpoints").mkdir(parents=True, exist_ok=True)
    (logdir / "checkpoints" / "checkpoint").write_text('model_checkpoint_path: "ckpt-10"\n')


def a_logdir(tmp_path: pathlib.Path) -> pathlib.Path:
    logdir = tmp_path / "run"
    logdir.mkdir()
    (logdir / "config.toml").write_text('command = "run"\n')
    return logdir


def test_a_resumed_run_carries_on_its_mlflow_run_and_a_fresh_start_opens_a_new_one(tmp_path) -> None:
    from mlflow.tracking import MlflowClient

    logdir = a_logdir(tmp_path)
    first = open_tracker("mlflow", TrackerConfig(), logdir, DOCUMENT)
    first.scalars({"charts/frames": 100.0}, 100)
    first.close(ok=True)
    assert resumed_run_id(logdir, "mlflow") is None  # no checkpoint: a new start, not a resume
    checkpointed(logdir)
    assert resumed_run_id(logdir, "mlflow") == first.run_id

    # The resumed session's config differs (a live change): the parameter keeps its first value, new keys are added.
    second = open_tracker("mlflow", TrackerConfig(), logdir, {**DOCUMENT, "learner": {"env": "CartPole-v1", "seed": 2, "extra": 3}})
    assert second.run_id == first.run_id
    second.scalars({"charts/frames": 200.0}, 200)
    client = MlflowClient(tracking_uri=f"sqlite:///{(logdir / 'mlflow.db').resolve()}")
    run = client.get_run(first.run_id)
    assert run.info.status == "RUNNING" and run.data.params["learner.seed"] == "1" and run.data.params["learner.extra"] == "3"
    assert [m.step for m in client.get_metric_history(first.run_id, "charts/frames")] == [100, 200]
    second.close(ok=True)
    assert len(client.search_runs([run.info.experiment_id])) == 1

    (logdir / "checkpoints" / "checkpoint").unlink()  # the logdir reused without its checkpoints: a new run
    third = open_tracker("mlflow", TrackerConfig(), logdir, DOCUMENT)
    assert third.run_id != first.run_id and resumed_run_id(logdir, "mlflow") is None
    third.close(ok=True)


def test_a_resumed_run_carries_on_its_wandb_run(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DATA_DIR", str(tmp_path / "wandb-data"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    logdir = a_logdir(tmp_path)
    first = open_tracker("wandb", TrackerConfig(), logdir, DOCUMENT)
    first.close(ok=True)
    checkpointed(logdir)
    second = open_tracker("wandb", TrackerConfig(), logdir, DOCUMENT)
    try:
        assert second.run_id == first.run_id and (logdir / RUN_IDS).is_file()
    finally:
        second.close(ok=True)
