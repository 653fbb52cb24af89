"""TensorFlow starts without its CUDA noise on a machine without a GPU, and real errors still show."""

from __future__ import annotations

import glob
import subprocess
import sys

from aioseed.tf_start import noise_free

STUB = "I0000 00:00:1795493948.039095   26859 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.\n"
ABSL = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
CUINIT = "E0000 00:00:1795493952.785877   26859 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
REAL = "E0000 00:00:1795493952.785877   26859 op_kernel.cc:1830] OP_REQUIRES failed: out of memory\n"


def test_noise_lines_go_and_real_errors_stay() -> None:
    text = ABSL + STUB + REAL + CUINIT + "Traceback (most recent call last):\n"
    assert noise_free(text, gpu_present=False) == REAL + "Traceback (most recent call last):\n"
    # With an NVIDIA device present, a failed cuInit is a real error.
    assert noise_free(text, gpu_present=True) == REAL + CUINIT + "Traceback (most recent call last):\n"


def test_starting_tensorflow_writes_no_noise_but_keeps_stderr_working() -> None:
    code = (
        "import sys\n"
        "from aioseed.tf_start import start_tensorflow\n"
        "start_tensorflow()\n"
        "import tensorflow as tf\n"
        "print('after', len(tf.config.list_physical_devices('CPU')), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "cudart_stub" not in done.stderr and "absl::InitializeLog" not in done.stderr
    if not glob.glob("/dev/nvidia[0-9]*"):
        assert "cuInit" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == "after 1"  # fd 2 is back and written to
