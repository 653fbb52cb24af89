"""Device flags -> training and inference devices (conftest has split the CPU into two logical devices)."""

from __future__ import annotations

import pytest
import tensorflow as tf

from aioseed.compose.devices import inference_devices, parse_names, place, split_cpu, training_devices


def test_names_are_read_as_tensorflow_device_names() -> None:
    assert parse_names("/gpu:0, GPU:1") == ("/GPU:0", "/GPU:1")
    assert parse_names("/CPU:0,/device:CPU:1") == ("/CPU:0", "/CPU:1")
    with pytest.raises(ValueError, match="expected a name like /CPU:0"):
        parse_names("/TPU:0")
    with pytest.raises(ValueError, match="repeat"):
        parse_names("/CPU:0,/cpu:0")
    with pytest.raises(ValueError, match="no device"):
        parse_names(" , ")


def test_keywords_pick_devices_from_what_tensorflow_sees() -> None:
    gpus = tf.config.list_physical_devices("GPU")
    assert training_devices("cpu") == ("/CPU:0",)
    assert training_devices("auto") == (("/GPU:0",) if gpus else ("/CPU:0",))
    assert training_devices("all") == (tuple(f"/GPU:{i}" for i in range(len(gpus))) or ("/CPU:0",))
    assert inference_devices("same", ("/CPU:1", "/CPU:0")) == ("/CPU:1",)
    assert inference_devices("/CPU:0,/CPU:1", ("/CPU:0",)) == ("/CPU:0", "/CPU:1")


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")), reason="checks the refusals of a machine without GPUs")
def test_devices_that_do_not_exist_are_refused_with_their_name() -> None:
    with pytest.raises(ValueError, match="sees no GPU"):
        training_devices("gpu")
    with pytest.raises(ValueError, match=r"/GPU:3: TensorFlow sees 0 GPU"):
        place("/GPU:3")


def test_logical_cpus_cannot_grow_once_tensorflow_runs() -> None:
    tf.constant(1.0)  # the runtime is up (with the two logical CPUs conftest asked for)
    split_cpu(2)  # already there: nothing to do
    with pytest.raises(ValueError, match=r"/CPU:3 needs the CPU split into 4 logical devices, but TensorFlow already started with 2"):
        place("/CPU:0,/CPU:3")


def test_place_builds_replicas_for_the_named_devices() -> None:
    replicas = place("/CPU:0,/CPU:1", "/CPU:1")
    assert replicas.count == 2 and replicas.training == ("/CPU:0", "/CPU:1") and replicas.inference == ("/CPU:1",)
    assert place("cpu").count == 1
