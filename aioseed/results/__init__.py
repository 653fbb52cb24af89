"""Results others can check: human-normalised Atari scores, aggregates over games and seeds with
stratified-bootstrap confidence intervals (rliable), and ``aioseed report`` over runs' logdirs."""
