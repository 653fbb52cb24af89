"""``aioseed actors``: a fleet of actors as Ray actors, on a local or a remote Ray cluster."""

from __future__ import annotations

from aioseed.clients.fleet import FleetConfig

__all__ = ["FleetConfig", "main"]


def main(config: FleetConfig) -> int:
    """``aioseed actors``'s exit status."""
    import uvloop

    from aioseed.clients.fleet import run_fleet

    return uvloop.run(run_fleet(config))
