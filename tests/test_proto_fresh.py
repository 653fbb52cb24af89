"""The committed gRPC code matches aioseed.proto (regenerate with `make proto`)."""

from __future__ import annotations

from aioseed.proto import generate


def test_generated_code_is_up_to_date() -> None:
    for name, text in generate.render().items():
        committed = (generate.HERE / name).read_text()
        assert committed == text, f"aioseed/proto/{name} is stale: run `make proto`"
