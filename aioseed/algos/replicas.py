"""Where an agent trains and infers: data-parallel training on a ``tf.distribute`` strategy, and the
devices inference takes batches round-robin on.

One training device uses ``OneDeviceStrategy``; several use ``MirroredStrategy``, which keeps a copy of
every variable (network, optimizer slots, learning rate) on each. A train step then:

1. splits the batch along its batch axis into one equal share per replica (``split``);
2. each replica computes the gradients of its share's loss divided by the number of replicas
   (losses are means over equal shares, so the sum is the gradient of the whole batch's loss);
3. the strategy sums them on the first training device (``Strategy.reduce``);
4. the optimizer clips the sum by its global norm and applies it once, only if finite, which
   updates every copy alike (``aioseed.algos.optimizer.minimize``).

The update is the one a single device makes on the whole batch, up to float rounding
(tests/algos/test_replicas.py). Variables are saved once, not per copy, so a checkpoint written on
one device restores on two and the reverse.

Inference reads the same variables, not a published copy: on a device that also trains it reads
that device's copy; elsewhere it reads the first training device's copy, which TensorFlow moves
per call. The policy lag is therefore what one device gives.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

ReplicaLoss = Callable[[dict[str, Any]], tuple[tf.Tensor, dict[str, tf.Tensor], dict[str, tf.Tensor]]]
"""A replica's share -> (<float32>[] loss, scalar metrics, per-row outputs <*>[b, ...])."""


class Replicas:
    """Verbs: ``scope`` (variables go there), ``split`` a batch, ``run`` a replica function and reduce it,
    ``inference_device`` (round-robin)."""

    def __init__(self, training: Sequence[str] = ("/CPU:0",), inference: Sequence[str] = ()) -> None:
        """``training``: TensorFlow device names; ``inference``: device names (empty: the first training one)."""
        if not training:
            raise ValueError("at least one training device is needed")
        if len(set(training)) != len(training):
            raise ValueError(f"training devices repeat: {list(training)}")
        self.training = tuple(training)
        self.inference = tuple(inference) or self.training[:1]
        if len(self.training) == 1:
            self.strategy: tf.distribute.Strategy = tf.distribute.OneDeviceStrategy(self.training[0])
        else:
            # NCCL all-reduce between GPUs; on CPU logical devices a reduction on one device.
            gpus = all("GPU" in device.upper() for device in self.training)
            cross_device = None if gpus else tf.distribute.ReductionToOneDevice(self.training[0])
            self.strategy = tf.distribute.MirroredStrategy(list(self.training), cross_device_ops=cross_device)
        self._cycle: Iterator[str] = itertools.cycle(self.inference)
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        """Training replicas: a train batch's size must be a multiple of it."""
        return self.strategy.num_replicas_in_sync

    def scope(self) -> Any:
        """Create the variables that train in here, so the strategy mirrors them."""
        return self.strategy.scope()

    def inference_device(self) -> str:
        """The next inference device, round-robin (thread-safe: concurrent batches take turns)."""
        with self._lock:
            return next(self._cycle)

    def check_divides(self, rows: int, what: str) -> None:
        if rows % self.count:
            raise ValueError(f"{what} = {rows} must be a multiple of the {self.count} training devices")

    def split(self, columns: Mapping[str, np.ndarray], batch_axis: Mapping[str, int]) -> dict[str, Any]:
        """Each replica's equal share of ``columns``, cut along ``batch_axis[name]`` (default 1: time-major)."""
        if self.count == 1:
            return dict(columns)
        shares = {}
        for name, column in columns.items():
            axis = batch_axis.get(name, 1)
            self.check_divides(column.shape[axis], f"{name}'s batch axis")
            parts = np.split(column, self.count, axis=axis)
            shares[name] = self.strategy.experimental_distribute_values_from_function(
                lambda context, parts=parts: parts[context.replica_id_in_sync_group]
            )
        return shares

    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn`` on every replica's share (inside a ``tf.function``); returns per-replica values."""
        return self.strategy.run(fn, args=args)

    def mean(self, values: Any) -> Any:
        """Per-replica scalars -> their mean (a nest)."""
        if self.count == 1:
            return values
        return tf.nest.map_structure(lambda v: self.strategy.reduce("MEAN", v, axis=None), values)

    def total(self, values: Any) -> Any:
        """Per-replica tensors -> their sum, on the first training device (a nest)."""
        if self.count == 1:
            return values
        with tf.device(self.training[0]):
            return tf.nest.map_structure(lambda v: self.strategy.reduce("SUM", v, axis=None), values)

    def concat(self, values: Any, axis: int = 0) -> Any:
        """Per-replica tensors -> one tensor, the shares concatenated back along ``axis`` (a nest)."""
        if self.count == 1:
            return values
        return tf.nest.map_structure(lambda v: self.strategy.gather(v, axis=axis), values)


def replica_sum(x: tf.Tensor) -> tf.Tensor:
    """``x`` summed over the replicas of the current replica context (unchanged outside one or with one)."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return x
    return context.all_reduce("SUM", x)
