"""The learner's serving sections: the gRPC port and its limits, the console, the stop conditions and
self-play. The run's whole config, which holds them, is ``aioseed.compose.config.LearnerConfig``."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Literal, Protocol

from aioseed.server.batching.autotune import BatchingConfig
from aioseed.server.batching.batcher import BatcherConfig
from aioseed.tokens import read_named_tokens, token_of


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    """The gRPC port actors connect to, and the limits that keep one client from hurting the others."""

    host: str = "0.0.0.0"
    """Address the gRPC server binds."""
    port: int = 8686
    """gRPC port (0 picks a free one)."""
    token: str | None = None
    """Shared secret actors must send (gRPC metadata authorization: Bearer TOKEN); None disables auth."""
    token_file: pathlib.Path | None = None
    """File whose first line is the token, instead of --server.token (which the process list shows)."""
    tls_cert: pathlib.Path | None = None
    """PEM certificate chain of the gRPC port; with tls_key, the port serves TLS only."""
    tls_key: pathlib.Path | None = None
    """PEM private key for tls_cert."""
    max_streams: int = 8192
    """Concurrent actor streams served, counting those still owing their hello; more get
    RESOURCE_EXHAUSTED and existing ones carry on."""
    max_envs: int = 65536
    """Env slots the learner will hand out in total."""
    max_envs_per_stream: int = 1024
    """Largest K (envs per message) one stream may declare."""
    max_envs_per_actor: int = 4096
    """Env slots one actor connection (one ``aioseed actor`` process: its channel and all its streams)
    may hold at once; behind a proxy that merges connections, raise it."""
    hello_timeout_s: float = 10.0
    """A stream that sends no hello within this many seconds is closed (DEADLINE_EXCEEDED)."""
    message_timeout_s: float = 120.0
    """After the hello, a stream whose next message has not arrived this many seconds after the learner's
    answer is closed (DEADLINE_EXCEEDED): a trickled or abandoned stream cannot hold its slots. The clock starts
    as the answer is handed over, so a stream that stops taking its answers in is closed too."""
    max_abs_reward: float = 1e6
    """Rows with a larger |reward| are refused (INVALID_ARGUMENT): finite but huge rewards overflow the loss."""
    max_abs_observation: float = 1e6
    """Rows of float observations with a larger |element| are refused, as for max_abs_reward."""
    slot_grace_s: float = 30.0
    """A disconnected actor's slots stay reserved this long for its reconnect (while other slots are free: with
    none left, the oldest reservation goes to a new actor)."""
    max_message_bytes: int = 64 * 1024 * 1024
    """Largest gRPC message accepted or sent. A hello of more envs than one message of this size holds is refused."""
    params_chunk_bytes: int = 1024 * 1024
    """IMPALA mode: parameter downloads are cut into messages of at most this many tensor bytes (and at
    most half of max_message_bytes)."""
    max_params_calls: int = 64
    """IMPALA mode: parameter downloads served at once; more get RESOURCE_EXHAUSTED."""
    max_upload_bytes: int = 512 * 1024 * 1024
    """IMPALA mode: bytes of unroll uploads the learner holds at once (parsed or waiting for queue room),
    across all streams; an upload past it gets RESOURCE_EXHAUSTED, so a flood of large uploads cannot
    grow the learner's memory beyond it."""
    max_params_calls_per_actor: int = 4
    """IMPALA mode: parameter downloads one actor connection may hold at once (aioseed's actor pulls one
    at a time), so that no client can take every download slot; more get RESOURCE_EXHAUSTED."""
    params_send_timeout_s: float = 10.0
    """IMPALA mode: a parameter download not taken in within this many seconds ends with DEADLINE_EXCEEDED,
    freeing its slot (a client that stops reading)."""
    params_stall_s: float = 1.0
    """IMPALA mode: a parameter download whose chunk has not been taken in after this many seconds no
    longer counts against max_params_calls, so stalled clients cannot keep healthy actors' downloads
    out; at most max_params_calls stalled ones are kept (the oldest is ended first)."""
    keepalive_s: float = 10.0
    """The learner pings a connection after this many seconds without traffic; one that does not answer
    within keepalive_timeout_s is closed with its calls, so a peer that vanished without a reset frees
    its slots and downloads within seconds (gRPC's default waits two hours)."""
    keepalive_timeout_s: float = 5.0
    """Seconds a keepalive ping may go unanswered before the connection is closed."""
    shutdown_grace_s: float = 1.0
    """Seconds in-flight streams get to finish when the learner stops."""

    @property
    def actor_token(self) -> str | None:
        """The token actors must send: token, or the first line of token_file (read now)."""
        return token_of(self.token, self.token_file, "--server.token-file")

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in [0, 65535], got {self.port}")
        if self.token is not None and self.token_file is not None:
            raise ValueError("give the token as token or as token_file, not both")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together: the port serves TLS with both or plaintext with neither")
        if self.max_streams < 1:
            raise ValueError(f"max_streams must be >= 1, got {self.max_streams}")
        if min(self.max_envs, self.max_envs_per_stream, self.max_envs_per_actor) < 1:
            raise ValueError("max_envs, max_envs_per_stream and max_envs_per_actor must be >= 1")
        if min(self.params_chunk_bytes, self.max_params_calls, self.max_params_calls_per_actor, self.max_upload_bytes) < 1:
            raise ValueError("params_chunk_bytes, max_params_calls, max_params_calls_per_actor and max_upload_bytes must be >= 1")
        if min(self.params_send_timeout_s, self.params_stall_s, self.keepalive_s, self.keepalive_timeout_s) <= 0:
            raise ValueError("params_send_timeout_s, params_stall_s, keepalive_s and keepalive_timeout_s must be positive")
        if min(self.hello_timeout_s, self.message_timeout_s) <= 0:
            raise ValueError("hello_timeout_s and message_timeout_s must be positive")
        if not (self.max_abs_reward > 0 and self.max_abs_observation > 0):
            raise ValueError("max_abs_reward and max_abs_observation must be positive: every row would be refused")


@dataclasses.dataclass(frozen=True)
class ConsoleConfig:
    """The web console: live metrics and control over HTTP."""

    enabled: bool = True
    """Serve the console (--console.no-enabled turns it off)."""
    host: str = "127.0.0.1"
    """Address the console binds. Off loopback, reading needs the token too."""
    port: int = 8080
    """Console HTTP port (0 picks a free one)."""
    token: str | None = None
    """Token for the control endpoints and the live feed (None: a random one, printed in the console URL); the
    settings record names changes made with it "local"."""
    tokens_file: pathlib.Path | None = None
    """More tokens, each with a name: a file of NAME TOKEN lines (# comments). Each opens the console as the token
    does, and the settings record (logdir/settings/changes.jsonl) names the changes made with it by NAME."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names the console answers to besides IP literals and localhost (others get 400, against DNS
    rebinding); * allows any, e.g. behind a proxy that checks Host itself."""

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"console port must be in [0, 65535], got {self.port}")

    def named_tokens(self) -> dict[str, str]:
        """{token: name} of tokens_file (read now; empty without one)."""
        return {} if self.tokens_file is None else read_named_tokens(self.tokens_file, "--console.tokens-file")


@dataclasses.dataclass(frozen=True)
class StopConfig:
    """When the learner stops by itself (besides SIGINT/SIGTERM and the console); the first met wins."""

    at_return: float | None = None
    """Once the mean return over return_window episodes reaches this."""
    after_frames: int | None = None
    """After this many env frames."""
    after_seconds: float | None = None
    """After this many seconds of serving."""
    after_training_seconds: float | None = None
    """After this many seconds from the session's first env frames: start-up (the actors' processes, TensorFlow's
    import, their connections) left out, as a benchmark's timed hold wants. Anakin counts from the end of its first
    iteration (its compile left out too)."""

    def __post_init__(self) -> None:
        if self.after_frames is not None and self.after_frames < 1:
            raise ValueError(f"after_frames must be >= 1, got {self.after_frames}")
        for name in ("after_seconds", "after_training_seconds"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive, got {value}")


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Who plays the right-side players of a multi-player game (Football with --football.right-players > 0)."""

    opponent: Literal["policy", "frozen", "separate"] = "policy"
    """policy: the learner's own policy, trained on both sides' rows. frozen: self-play against an earlier
    version: a copy of the policy, frozen between refreshes and checkpointed with the run; its rows are
    never trained on. separate: one policy per side, of the same architecture, each trained on its own
    side's rows (checkpointed together; eval and serve act on each row with its side's). V-trace/PPO agents."""
    refresh_frames: int = 500_000
    """frozen: frames between refreshes, each of which copies the learner's policy into the opponent."""

    def __post_init__(self) -> None:
        if self.refresh_frames < 1:
            raise ValueError(f"self_play.refresh_frames must be positive, got {self.refresh_frames}")


class LearnerSettings(Protocol):
    """What the ``Learner`` reads of the run's config (``aioseed.compose.config.LearnerConfig`` has it all)."""

    @property
    def server(self) -> ServerConfig: ...
    @property
    def batcher(self) -> BatcherConfig: ...
    @property
    def batching(self) -> BatchingConfig: ...
    @property
    def logdir(self) -> pathlib.Path | None: ...
    @property
    def checkpoint_every_s(self) -> float: ...
    @property
    def metrics_every_s(self) -> float: ...
    @property
    def log_every_s(self) -> float: ...
