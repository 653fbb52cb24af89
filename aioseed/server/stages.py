"""The learner's stages, in data-path order, as ``aioseed.compose.learner`` builds them for ``Learner``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from aioseed.server.acting.inference import InferenceLoop
from aioseed.server.batching.batcher import Batcher
from aioseed.server.reporting.reporter import Snapshot
from aioseed.server.reporting.stats import Stats
from aioseed.server.reporting.tracking import Sender
from aioseed.server.stopping import Stopping
from aioseed.server.training.checkpoint import Checkpointer
from aioseed.server.training.live_settings import LiveSettings
from aioseed.server.training.trainer import Trainer
from aioseed.server.trajectories.pacing import Pacing
from aioseed.server.trajectories.source import Source
from aioseed.server.transport.endpoint import GrpcEndpoint
from aioseed.server.transport.params import ParamsPublisher
from aioseed.server.transport.service import LearnerService


@dataclasses.dataclass(frozen=True)
class Stages:
    """The learner's parts, in data-path order; ``aioseed.compose.learner.build`` makes them."""

    endpoint: GrpcEndpoint
    """The gRPC server: auth, TLS, health."""
    service: LearnerService
    """Actor streams: handshakes, env slots, row checks."""
    batcher: Batcher
    """Rows from all streams -> deadline-based batches."""
    inference: InferenceLoop
    """Batches -> the policy -> actions, and completed unrolls into the bounded queue."""
    source: Source
    """Unrolls -> time-major train batches (V-trace's queue, R2D2's replay)."""
    trainer: Trainer
    """Train batches -> the agent's train step -> new parameters."""
    stats: Stats
    stopping: Stopping
    checkpointer: Checkpointer | None = None
    write_summaries: Callable[[Snapshot, int], None] | None = None
    """TensorBoard: (snapshot, frames), called in the train thread."""
    params: ParamsPublisher | None = None
    """IMPALA mode: the parameters actors pull (published after every update)."""
    tracker: Sender | None = None
    """--tracking: W&B or MLflow (its scalars go through ``write_summaries``)."""
    pacing: Pacing | None = None
    """How far acting may run ahead of training (shared by the inference loop and the trainer)."""
    live: LiveSettings | None = None
    """The training settings that may change while it trains (none when nothing trains: aioseed serve)."""
