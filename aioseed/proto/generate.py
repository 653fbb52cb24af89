"""Regenerates the committed gRPC code from ``aioseed.proto``.

Run ``python -m aioseed.proto.generate`` (or ``make proto``) after editing the
proto. ``tests/test_proto_fresh.py`` fails when the committed code is stale.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
PROTO = HERE / "aioseed.proto"
OUTPUTS = ("aioseed_pb2.py", "aioseed_pb2.pyi", "aioseed_pb2_grpc.py")


def generate(out_dir: pathlib.Path) -> None:
    """Writes the generated modules for ``aioseed.proto`` into ``out_dir``."""
    # protoc runs in its own process: its protobuf runtime must not meet TensorFlow's.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{HERE}",
            f"--python_out={out_dir}",
            f"--pyi_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            str(PROTO),
        ],
        check=True,
    )
    grpc_file = out_dir / "aioseed_pb2_grpc.py"
    # protoc emits an absolute import; make it package-relative.
    text = re.sub(
        r"^import aioseed_pb2 as", "from . import aioseed_pb2 as", grpc_file.read_text(), flags=re.M
    )
    grpc_file.write_text(text)


def render() -> dict[str, str]:
    """Returns the generated modules' text, keyed by file name."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp)
        generate(out)
        return {name: (out / name).read_text() for name in OUTPUTS}


def main() -> int:
    for name, text in render().items():
        (HERE / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
