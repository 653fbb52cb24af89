"""The committed gRPC code matches aioseed.proto (regenerate with `make proto`)."""

from __future__ import annotations

from aioseed.proto import generate


def test_generated_code_is_up_to_date() -> None:
    for name, text in generate.render().items():
        committed = (generate.HERE / name).read_text()
        assert committed == text, f"aioseed/proto/{name} is stale: run `make proto`"


def test_the_service_name_is_the_protos() -> None:
    from aioseed.proto import SERVICE_NAME, aioseed_pb2

    assert aioseed_pb2.DESCRIPTOR.services_by_name["Learner"].full_name == SERVICE_NAME
