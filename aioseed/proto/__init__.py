"""Generated gRPC code for ``aioseed.proto`` (regenerate with ``make proto``)."""

SERVICE_NAME = "aioseed.v1.Learner"
"""The learner service's full name, as its gRPC health service reports it (tests/test_proto_fresh.py checks it)."""
