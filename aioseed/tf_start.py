"""TensorFlow's start without its noise: on a machine without CUDA, importing TensorFlow and listing
its GPUs writes CUDA-stub notices and an ``E0000 ... failed call to cuInit`` line that reads like a
failure. ``start_tensorflow`` does both with file descriptor 2 sent through a filter that passes on
every line that is not known noise (a real error still shows; the cuInit line too where an NVIDIA
device exists, since there it is one)."""

from __future__ import annotations

import glob
import os
import re
import sys
import threading

NOISE = re.compile(
    "|".join(
        (
            r"All log messages before absl::InitializeLog\(\) is called",
            r"cudart_stub\.cc:\d+\] Could not find cuda drivers",
            r"Unable to register cu(DNN|FFT|BLAS) factory",
            r"computation placer already registered",
            r"oneDNN custom operations are on",
            r"This TensorFlow binary is optimized to use available CPU instructions",
            r"To enable the following instructions: .* rebuild TensorFlow",
        )
    )
)
"""Start-up lines that say nothing went wrong, wherever TensorFlow runs."""
NO_GPU_NOISE = re.compile(r"failed call to cuInit")
"""Noise only where no NVIDIA device exists: the CUDA driver library is there, a GPU is not."""

_started = False


def noise_free(text: str, gpu_present: bool) -> str:
    """``text`` without the lines that are start-up noise."""
    kept = []
    for line in text.splitlines(keepends=True):
        if NOISE.search(line) or (not gpu_present and NO_GPU_NOISE.search(line)):
            continue
        kept.append(line)
    return "".join(kept)


def start_tensorflow() -> None:
    """Imports TensorFlow and lets it look for GPUs, quietly (once per process; a no-op after). Its
    file descriptor 2 goes through a pipe meanwhile; a thread passes each line on as it comes unless it
    is noise, so a crash during the import still shows what was written before it."""
    global _started
    if _started:
        return
    _started = True
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # Python-side INFO and WARNING lines
    gpu_present = bool(glob.glob("/dev/nvidia[0-9]*"))
    sys.stderr.flush()
    saved, (reading, writing) = os.dup(2), os.pipe()

    def forward() -> None:
        with os.fdopen(reading, "rb") as lines:
            for line in lines:
                kept = noise_free(line.decode(errors="replace"), gpu_present)
                if kept:
                    os.write(saved, kept.encode())

    forwarder = threading.Thread(target=forward, name="tf-start-stderr", daemon=True)
    forwarder.start()
    os.dup2(writing, 2)
    os.close(writing)
    try:
        import tensorflow as tf

        tf.config.list_physical_devices("GPU")
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last writer closes: the thread reads to its end
        forwarder.join(timeout=10)
        if not forwarder.is_alive():
            os.close(saved)
