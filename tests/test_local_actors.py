"""Local actor processes: a spawn that fails part-way leaves none of the others running."""

from __future__ import annotations

import pytest

from aioseed import local_actors
from aioseed.clients.actor import ActorConfig


def test_a_spawn_that_fails_stops_the_actors_already_started(monkeypatch) -> None:
    started: list[FakeProcess] = []

    class FakeProcess:  # multiprocessing's Process verbs; the third cannot start (out of processes)
        def __init__(self, target, args, name) -> None:
            self.name, self.alive = name, False

        def start(self) -> None:
            if len(started) == 2:
                raise OSError("[Errno 11] Resource temporarily unavailable")
            self.alive = True
            started.append(self)

        def is_alive(self) -> bool:
            return self.alive

        def terminate(self) -> None:
            self.alive = False

        def join(self, timeout=None) -> None:
            pass

    class Context:
        Process = FakeProcess

    monkeypatch.setattr(local_actors.multiprocessing, "get_context", lambda method: Context())
    with pytest.raises(OSError, match="Resource temporarily unavailable"):
        local_actors.start_actors([ActorConfig(name=f"actor-{i}") for i in range(3)])
    assert [p.name for p in started] == ["actor-0", "actor-1"] and not any(p.is_alive() for p in started)
