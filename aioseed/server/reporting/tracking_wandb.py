"""``--tracking wandb``: a Weights & Biases run (WANDB_MODE=offline keeps it on disk under LOGDIR/wandb)."""

from __future__ import annotations

import pathlib
import re
from collections.abc import Mapping
from typing import Any


class WandbTracker:
    def __init__(self, project: str, name: str, logdir: pathlib.Path, document: Mapping[str, Any], run_id: str | None = None) -> None:
        """``run_id``: the run a resumed run carries on (W&B's ``resume="allow"``)."""
        import wandb

        self._wandb = wandb
        self._name = re.sub(r"[^A-Za-z0-9_.-]", "-", name)
        resume = {} if run_id is None else {"id": run_id, "resume": "allow"}
        self._run = wandb.init(project=project, name=name, dir=str(logdir), config=dict(document), job_type="train", **resume)
        self.run_id: str = self._run.id
        self._run.save(str(logdir / "config.toml"), base_path=str(logdir), policy="now")

    def scalars(self, snapshot: Mapping[str, float], frames: int) -> None:
        self._run.log({k: v for k, v in snapshot.items() if k != "time"}, step=frames)

    def clip(self, path: pathlib.Path, frames: int) -> None:
        self._run.log({"eval/clip": self._wandb.Video(str(path), format="mp4")}, step=frames)

    def checkpoint(self, files: list[pathlib.Path], name: str, frames: int) -> None:
        artifact = self._wandb.Artifact(f"{self._name}-checkpoint", type="model", metadata={"frames": frames, "checkpoint": name})
        for path in files:
            artifact.add_file(str(path), name=path.name)
        self._run.log_artifact(artifact, aliases=["latest", name])

    def close(self, ok: bool) -> None:
        self._run.finish(exit_code=0 if ok else 1)
