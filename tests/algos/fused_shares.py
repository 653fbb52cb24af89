"""The check both replay-trained actor-critics' fused calls face: the same updates as their shares one call each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

ATOL = 1e-5


def assert_same_updates(
    fused: Any, one_at_a_time: Any, variables: Callable[[Any], list[tf.Variable]], batches: Sequence[dict[str, np.ndarray]], shares: int
) -> None:
    """Copies ``fused``'s ``variables`` into ``one_at_a_time``'s, trains ``fused`` on each batch in one call and
    ``one_at_a_time`` on the batch's ``shares`` equal shares in order, then asserts the same variables (float32
    rounding apart) and targets that moved well past that tolerance (a missed target update shows)."""
    for mine, theirs in zip(variables(one_at_a_time), variables(fused), strict=True):
        mine.assign(theirs)
    targets = [w.numpy().copy() for w in fused.target_network.weights]
    for batch in batches:
        fused.train_step(batch)
        rows = batch["action"].shape[1] // shares
        for i in range(shares):
            one_at_a_time.train_step({name: column[:, i * rows : (i + 1) * rows] for name, column in batch.items()})
    assert int(fused.actor_optimizer.iterations.numpy()) == int(one_at_a_time.actor_optimizer.iterations.numpy())
    for mine, theirs in zip(variables(one_at_a_time), variables(fused), strict=True):
        np.testing.assert_allclose(theirs.numpy(), mine.numpy(), rtol=1e-4, atol=ATOL, err_msg=mine.name)
    assert max(np.abs(w.numpy() - t).max() for w, t in zip(fused.target_network.weights, targets)) > 100 * ATOL
