"""The gRPC server actors connect to: the learner service, health, the token check and TLS."""

from __future__ import annotations

import pathlib

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from aioseed.proto import SERVICE_NAME
from aioseed.proto import aioseed_pb2 as pb
from aioseed.proto import aioseed_pb2_grpc as pb_grpc
from aioseed.server.transport.auth import TokenInterceptor
from aioseed.server.transport.protocol import ProtocolError, strict_parser

_params_request = strict_parser(pb.ParamsRequest)


def server_options(
    max_streams: int, max_message_bytes: int, keepalive_s: float = 10.0, keepalive_timeout_s: float = 5.0
) -> list[tuple[str, int]]:
    """gRPC server options for ``max_streams`` concurrent streams of messages up to ``max_message_bytes``;
    a connection silent for ``keepalive_s`` is pinged and closed if no answer comes within ``keepalive_timeout_s``."""
    return [
        ("grpc.keepalive_time_ms", round(keepalive_s * 1000)),
        ("grpc.keepalive_timeout_ms", round(keepalive_timeout_s * 1000)),
        # The timeout gRPC core applies to a ping in flight (without it an unanswered keepalive ping
        # never closed the connection here: tests/e2e/test_crash.py freezes an actor to check).
        ("grpc.http2.ping_timeout_ms", round(keepalive_timeout_s * 1000)),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),  # keep pinging a connection whose calls send nothing
        # Clients may ping as often as the learner does (gRPC's default refuses pings under 5 min apart).
        ("grpc.http2.min_ping_interval_without_data_ms", round(min(keepalive_s, 5.0) * 1000)),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        # Calls that arrived but were not yet picked up by the handler loop. gRPC's defaults (soft
        # 1,000, hard 3,000) cancel calls at random when a few thousand actors connect at once, so
        # the queue is sized to the stream limit: every stream reaches the handler and any past
        # max_streams gets RESOURCE_EXHAUSTED there.
        ("grpc.server.max_pending_requests", 2 * max_streams),
        ("grpc.server.max_pending_requests_hard_limit", 4 * max_streams),
    ]


def add_learner_service(servicer: pb_grpc.LearnerServicer, server: grpc.aio.Server) -> None:
    """``pb_grpc.add_LearnerServicer_to_server``, but requests are parsed strictly (``strict_parser``), and
    where a failure gets INVALID_ARGUMENT instead of gRPC's UNKNOWN: the streams' messages reach their
    handlers as bytes (the handler knows how long a valid one of that stream can be, and refuses a longer
    one before protobuf copies it), and a ``GetParams`` request that fails reaches the handler as its
    ProtocolError."""
    handlers = {
        "Act": grpc.stream_stream_rpc_method_handler(
            servicer.Act, None, pb.LearnerMessage.SerializeToString
        ),
        "Learn": grpc.stream_stream_rpc_method_handler(
            servicer.Learn, None, pb.LearnerMessage.SerializeToString
        ),
        "GetParams": grpc.unary_stream_rpc_method_handler(
            servicer.GetParams, params_request, pb.ParamsChunk.SerializeToString
        ),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    server.add_registered_method_handlers(SERVICE_NAME, handlers)


def params_request(raw: bytes) -> pb.ParamsRequest | ProtocolError:
    try:
        return _params_request(raw)
    except ProtocolError as exc:
        return exc


class GrpcEndpoint:
    """Verbs: ``start`` (binds, serves, reports SERVING; returns the port), ``drain``, ``stop``."""

    def __init__(
        self,
        servicer: pb_grpc.LearnerServicer,
        host: str,
        port: int,
        options: list[tuple[str, int]],
        token: str | None = None,
        tls: tuple[pathlib.Path, pathlib.Path] | None = None,
    ) -> None:
        """``tls``: (certificate chain, private key) PEM files; the port then serves TLS only."""
        self._servicer = servicer
        self._address = f"{host}:{port}"
        self._options = options
        self._token = token
        self._tls = tls
        self._health = health.aio.HealthServicer()
        self._server: grpc.aio.Server | None = None
        self.auth_refused = 0
        """Calls refused for a missing or wrong token."""
        self.port: int | None = None

    async def start(self) -> int:
        """The server is made here, inside the running loop that serves it."""
        interceptors = [TokenInterceptor(self._token, self._count_refusal)] if self._token else []
        server = grpc.aio.server(options=self._options, interceptors=interceptors)
        add_learner_service(self._servicer, server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        if self._tls is not None:
            cert, key = self._tls
            self.port = server.add_secure_port(self._address, grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())]))
        else:
            self.port = server.add_insecure_port(self._address)
        if self.port == 0:
            raise OSError(f"cannot bind {self._address}")
        await server.start()
        self._server = server
        await self._health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        return self.port

    async def drain(self, grace_s: float) -> None:
        """Health says NOT_SERVING, new calls are refused, and streams in flight get ``grace_s`` to end."""
        await self._health.enter_graceful_shutdown()
        if self._server is not None:
            await self._server.stop(grace_s)

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(None)

    def _count_refusal(self) -> None:
        self.auth_refused += 1
