"""``--tracking mlflow``: an MLflow run through its tracking client (any store: a local SQLite file by
default, or a tracking server's URL)."""

from __future__ import annotations

import pathlib
import re
import time
from collections.abc import Mapping
from typing import Any

from aioseed.tables import flatten

BATCH = 100
"""Parameters (and metrics, well under MLflow's 1,000) per log_batch call."""
PARAM_CHARS = 6000
"""MLflow's longest parameter value."""


def metric_key(name: str) -> str:
    """MLflow's keys take letters, digits, ``_-. /``: anything else becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9_\-. /]", "_", name)


class MlflowTracker:
    def __init__(
        self, experiment: str, name: str, uri: str, logdir: pathlib.Path, document: Mapping[str, Any], artifacts: str | None = None,
        run_id: str | None = None,
    ) -> None:
        """``artifacts``: where a new experiment keeps its artifacts (None: the store's default); ``run_id``: the run a
        resumed run carries on (its parameters keep their first values: MLflow refuses to change one)."""
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        self._client = MlflowClient(tracking_uri=uri)
        found = self._client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found is not None else self._client.create_experiment(experiment, artifacts)
        resumed = self._resumable(run_id, experiment_id)
        if resumed is not None:
            self.run_id, logged = resumed.info.run_id, set(resumed.data.params)
            self._client.update_run(self.run_id, status="RUNNING")
        else:
            tags = {"aioseed.logdir": str(logdir.resolve())}
            self.run_id, logged = self._client.create_run(experiment_id, run_name=name, tags=tags).info.run_id, set()
        params = [Param(key, str(value)[:PARAM_CHARS]) for key, value in flatten(document).items() if key not in logged]
        for start in range(0, len(params), BATCH):
            self._client.log_batch(self.run_id, params=params[start : start + BATCH])
        self._client.log_artifact(self.run_id, str(logdir / "config.toml"))

    def _resumable(self, run_id: str | None, experiment_id: str) -> Any:
        """The run ``run_id`` where this store holds it in ``experiment_id``, else None (a new one is opened)."""
        from mlflow.exceptions import MlflowException

        if run_id is None:
            return None
        try:
            run = self._client.get_run(run_id)
        except MlflowException:
            return None
        return run if run.info.experiment_id == experiment_id else None

    def scalars(self, snapshot: Mapping[str, float], frames: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(metric_key(k), float(v), now, frames) for k, v in snapshot.items() if k != "time" and v == v]
        for start in range(0, len(metrics), BATCH):
            self._client.log_batch(self.run_id, metrics=metrics[start : start + BATCH])

    def clip(self, path: pathlib.Path, frames: int) -> None:
        self._client.log_artifact(self.run_id, str(path), artifact_path="videos")

    def checkpoint(self, files: list[pathlib.Path], name: str, frames: int) -> None:
        for path in files:
            self._client.log_artifact(self.run_id, str(path), artifact_path=f"checkpoints/{name}")

    def close(self, ok: bool) -> None:
        self._client.set_terminated(self.run_id, status="FINISHED" if ok else "FAILED")
