"""The learner's devices from its flags: which train (data-parallel), which infer.

Names are TensorFlow's (``/GPU:1``, ``/CPU:0``). ``/CPU:k`` with k > 0 names a logical CPU device:
the physical CPU is split into k + 1 of them (``tf.config.set_logical_device_configuration``), which
must happen before TensorFlow starts its runtime; this is how several training replicas run, and are
tested, on a machine without accelerators. GPUs get memory growth, so that the learner takes the
memory it uses rather than all of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from aioseed.errors import InvalidInput

if TYPE_CHECKING:
    from aioseed.algos.replicas import Replicas

log = structlog.get_logger()


def parse_names(flag: str) -> tuple[str, ...]:
    """``/gpu:0, GPU:1`` -> ``("/GPU:0", "/GPU:1")``; raises InvalidInput (a ValueError) for anything but CPU or GPU names."""
    import tensorflow as tf

    names = []
    for part in flag.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            spec = tf.DeviceSpec.from_string(part if part.startswith("/") else "/" + part)
        except ValueError as exc:
            raise InvalidInput(f"cannot read device {part!r}: {exc}") from None
        if spec.device_type not in ("CPU", "GPU"):
            raise InvalidInput(f"device {part!r}: expected a name like /CPU:0 or /GPU:1")
        names.append(f"/{spec.device_type}:{spec.device_index or 0}")
    if not names:
        raise InvalidInput(f"no device named in {flag!r}")
    if len(set(names)) != len(names):
        raise InvalidInput(f"devices repeat in {flag!r}")
    return tuple(names)


def training_devices(flag: str) -> tuple[str, ...]:
    """auto: the first GPU, else the CPU; all: every GPU, else the CPU; cpu; gpu; or a comma list."""
    import tensorflow as tf

    gpus = [f"/GPU:{i}" for i in range(len(tf.config.list_physical_devices("GPU")))]
    match flag.strip().lower():
        case "auto":
            return tuple(gpus[:1]) or ("/CPU:0",)
        case "all":
            return tuple(gpus) or ("/CPU:0",)
        case "cpu":
            return ("/CPU:0",)
        case "gpu":
            if not gpus:
                raise InvalidInput("--devices gpu: TensorFlow sees no GPU")
            return ("/GPU:0",)
    return parse_names(flag)


def inference_devices(flag: str, training: tuple[str, ...]) -> tuple[str, ...]:
    """same: the first training device; otherwise as ``training_devices``."""
    if flag.strip().lower() == "same":
        return training[:1]
    return training_devices(flag)


def place(devices: str = "auto", inference: str = "same") -> Replicas:
    """Configures TensorFlow for the named devices and returns where the agent trains and infers."""
    import tensorflow as tf

    from aioseed.algos.replicas import Replicas

    training = training_devices(devices)
    serving = inference_devices(inference, training)
    named = training + serving
    _grow_gpu_memory()
    cpus = [int(name.split(":")[1]) for name in named if name.startswith("/CPU")]
    if cpus and max(cpus) > 0:
        split_cpu(max(cpus) + 1)
    gpus = len(tf.config.list_physical_devices("GPU"))
    for name in named:
        if name.startswith("/GPU") and int(name.split(":")[1]) >= gpus:
            raise InvalidInput(f"{name}: TensorFlow sees {gpus} GPU(s)")
    log.info("devices_placed", training=list(training), inference=list(serving))
    return Replicas(training, serving)


def split_cpu(count: int) -> None:
    """Splits the physical CPU into ``count`` logical devices /CPU:0 .. /CPU:count-1 (kept if already as many)."""
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu) or []
    if len(current) >= count:
        return
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])
    except RuntimeError:
        have = len(tf.config.list_logical_devices("CPU"))
        if have >= count:
            return
        raise InvalidInput(
            f"/CPU:{count - 1} needs the CPU split into {count} logical devices, but TensorFlow already "
            f"started with {have}; name the devices before anything else runs TensorFlow in this process"
        ) from None


def _grow_gpu_memory() -> None:
    import tensorflow as tf

    for gpu in tf.config.list_physical_devices("GPU"):
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError:  # the runtime started already: its setting stays
            pass
