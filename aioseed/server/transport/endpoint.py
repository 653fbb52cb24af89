"""The gRPC server actors connect to: the learner service, health, the token check and TLS."""

from __future__ import annotations

import pathlib
import ssl

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from aioseed.errors import InvalidInput, MissingFile, PortTaken
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


def tls_credentials(cert: pathlib.Path, key: pathlib.Path) -> grpc.ServerCredentials:
    """The port's TLS credentials; a UserError that names the file when one is missing, is not PEM, or when the
    key is not the certificate's (gRPC itself would only fail to bind)."""
    for path, flag in ((cert, "--server.tls-cert"), (key, "--server.tls-key")):
        if not path.is_file():
            raise MissingFile(f"{flag} {path}: no such file")
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise InvalidInput(f"--server.tls-key {key} is not the private key of --server.tls-cert {cert}") from None
        raise InvalidInput(f"--server.tls-cert {cert} and --server.tls-key {key} must be PEM files ({exc.reason or exc})") from None
    return grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())])


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
        try:
            if self._tls is not None:
                self.port = server.add_secure_port(self._address, tls_credentials(*self._tls))
            else:
                self.port = server.add_insecure_port(self._address)
        except RuntimeError:  # gRPC's "Failed to bind to address"
            self.port = 0
        if self.port == 0:
            raise PortTaken(
                f"cannot listen on {self._address}: another process holds the port, or the host is not this machine's "
                "(--server.port 0 picks a free port)"
            )
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
