"""Generated gRPC code for ``aioseed.proto`` (regenerate with ``make proto``)."""
