"""--tracking mlflow|wandb through a real run: the same scalars as TensorBoard at the same frames, the
resolved config.toml, the evaluation actor's clips and the last checkpoint, in MLflow's local SQLite
store and in W&B's offline mode (the real clients, nothing uploaded)."""

from __future__ import annotations

import json
import pathlib

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tests.processes import Process

RUN = [
    "--num-actors", "1", "--envs-per-actor", "8", "--envs-per-message", "8", "--evaluation-envs", "1",
    "--evaluation-video-every", "1", "--learner.stop.at-return", "None", "--learner.stop.after-frames", "15000",
    "--learner.log-every-s", "0.5", "--learner.console.no-enabled", "--learner.display", "lines",
]


async def train(logdir: pathlib.Path, tracking: str, env: dict[str, str] | None = None) -> str:
    run = await Process(["run", *RUN, "--learner.logdir", str(logdir), "--learner.tracking", tracking], env=env).start()
    try:
        assert await run.wait(timeout_s=240) == 0, run.log
    finally:
        run.kill()
    assert run.errors() == [], run.log
    return "\n".join(run.lines)


def tensorboard(logdir: pathlib.Path) -> dict[str, dict[int, float]]:
    """Every snapshot scalar the learner wrote to TensorBoard by step (charts/episode_returns, the episodes
    between two summaries as one tensor, is TensorBoard's alone: trackers get the snapshots)."""
    from tensorboard.util import tensor_util

    events = EventAccumulator(str(logdir / "tensorboard"), size_guidance={"tensors": 0})
    events.Reload()
    return {
        tag: {e.step: float(tensor_util.make_ndarray(e.tensor_proto)) for e in events.Tensors(tag)}
        for tag in events.Tags()["tensors"]
        if tag != "charts/episode_returns"
    }


@pytest.mark.parametrize("store", ["sqlite", "file"], ids=["the default: SQLite in the logdir", "a file store"])
async def test_mlflow_gets_the_scalars_config_clips_and_last_checkpoint(tmp_path, monkeypatch, store: str) -> None:
    from mlflow.tracking import MlflowClient

    logdir = tmp_path / "run"
    if store == "sqlite":
        await train(logdir, "mlflow", env={"MLFLOW_TRACKING_URI": ""})
        uri = f"sqlite:///{logdir / 'mlflow.db'}"
    else:  # MLflow 3 keeps its file store in maintenance mode, behind this opt-in
        uri = (tmp_path / "mlruns").as_uri()
        monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # for this test's own client
        await train(logdir, "mlflow", env={"MLFLOW_TRACKING_URI": uri, "MLFLOW_ALLOW_FILE_STORE": "true"})
    client = MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("aioseed").experiment_id])
    assert run.info.run_name == "run" and run.info.status == "FINISHED"
    assert run.data.params["learner.env"] == "CartPole-v1" and run.data.params["num_actors"] == "1"
    written = tensorboard(logdir)
    assert set(written) - {"time"} <= set(run.data.metrics), sorted(set(written) - set(run.data.metrics))
    sent = {m.step: m.value for m in client.get_metric_history(run.info.run_id, "charts/frames")}
    assert sent == written["charts/frames"]  # the same values at the same frames
    top = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.toml", "checkpoints", "videos"} <= top, top
    (checkpoint,) = client.list_artifacts(run.info.run_id, "checkpoints")  # only the last one ("last")
    files = {pathlib.PurePath(a.path).name for a in client.list_artifacts(run.info.run_id, checkpoint.path)}
    name = pathlib.PurePath(checkpoint.path).name
    assert {f"{name}.index", "checkpoint"} <= files and any(f.startswith(f"{name}.data-") for f in files), files
    assert (logdir / "checkpoints" / f"{name}.index").exists()
    clips = [pathlib.PurePath(a.path).name for a in client.list_artifacts(run.info.run_id, "videos")]
    assert clips and all(c.startswith("eval-") and c.endswith(".mp4") for c in clips)
    if store == "sqlite":  # the artifacts beside the run's store, not in the working directory
        assert (logdir / "mlartifacts").is_dir() and not (pathlib.Path.cwd() / "mlruns").exists()
    else:
        assert (tmp_path / "mlruns").is_dir()


def wandb_records(path: pathlib.Path) -> list:
    """The records of W&B's offline transaction log, parsed with W&B's own protobuf schema. The file is
    a LevelDB-style log: a 7-byte header, then 32 KiB blocks of chunks (crc32, length, type: full, first,
    middle or last), a record per full chunk or first..last run."""
    import struct

    from wandb.proto import wandb_internal_pb2

    data, block = path.read_bytes(), 32768
    assert data[:4] == b":W&B", data[:7]
    records, pending, position = [], b"", 7
    while position + 7 <= len(data):
        left = block - position % block
        _, length, kind = struct.unpack("<IHB", data[position : position + 7])
        if left < 7 or (length == 0 and kind == 0):  # the block's padding
            position += left
            continue
        pending += data[position + 7 : position + 7 + length]
        position += 7 + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


async def test_wandb_offline_gets_the_scalars_config_clips_and_last_checkpoint(tmp_path) -> None:
    logdir = tmp_path / "run"
    await train(logdir, "wandb", env={"WANDB_MODE": "offline", "WANDB_DATA_DIR": str(tmp_path / "wandb-data")})
    (run_dir,) = (logdir / "wandb").glob("offline-run-*")
    records = {}
    for record in wandb_records(next(run_dir.glob("run-*.wandb"))):
        records.setdefault(record.WhichOneof("record_type"), []).append(record)
    (run,) = records["run"]
    config = {item.key: json.loads(item.value_json) for item in run.run.config.update}
    assert config["learner"]["env"] == "CartPole-v1" and config["num_actors"] == 1
    assert (run_dir / "files" / "config.toml").read_text() == (logdir / "config.toml").read_text()
    history = [{item.key or ".".join(item.nested_key): json.loads(item.value_json) for item in r.history.item} for r in records["history"]]
    written = tensorboard(logdir)
    assert set(written) <= set().union(*history), sorted(set(written) - set().union(*history))
    sent = {row["_step"]: row["charts/frames"] for row in history if "charts/frames" in row}
    assert sent == written["charts/frames"]  # the same values at the same frames
    clips = [f.path for r in records["files"] for f in r.files.files if f.path.startswith("media/videos/")]
    assert clips and all(c.endswith(".mp4") for c in clips)
    (artifact,) = records["artifact"]  # only the last checkpoint ("last")
    files = {entry.path for entry in artifact.artifact.manifest.contents}
    assert artifact.artifact.name == "run-checkpoint" and artifact.artifact.type == "model"
    (index,) = [f for f in files if f.endswith(".index")]
    assert "checkpoint" in files and (logdir / "checkpoints" / index).exists()
    assert [r.exit.exit_code for r in records["exit"]] == [0]
