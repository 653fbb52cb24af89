"""``aioseed actor``: one actor process, SEED's (streams observations, steps envs) or IMPALA mode's (runs the
policy itself and uploads unrolls)."""

from __future__ import annotations

from aioseed.clients.actor import ActorConfig

__all__ = ["ActorConfig", "act", "main"]


def main(config: ActorConfig) -> int:
    """``aioseed actor``'s exit status."""
    import uvloop

    return uvloop.run(act(config))


async def act(config: ActorConfig) -> int:
    """Runs the actor ``config`` names; IMPALA mode's loads TensorFlow, so only then."""
    if config.architecture == "impala":
        from aioseed.impala_actor.actor import run_impala_actor

        return await run_impala_actor(config)
    from aioseed.clients.actor import run_actor

    return await run_actor(config)
