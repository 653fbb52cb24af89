"""Shared-token authentication for the gRPC service (metadata ``authorization: Bearer <token>``)."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

import grpc

HEALTH_PREFIX = "/grpc.health.v1.Health/"


class TokenInterceptor(grpc.aio.ServerInterceptor):
    """Refuses calls without the token with UNAUTHENTICATED before any handler runs.

    The health service stays open so that load balancers and actors can probe it.
    """

    def __init__(self, token: str, on_refused: Callable[[], None] = lambda: None) -> None:
        self._expected = f"Bearer {token}".encode()
        self._on_refused = on_refused

        async def deny(request: object, context: grpc.aio.ServicerContext) -> None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong learner token")

        async def deny_stream(request_iterator: object, context: grpc.aio.ServicerContext) -> None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong learner token")

        self._deny_unary = grpc.unary_unary_rpc_method_handler(deny)
        self._deny_stream = grpc.stream_stream_rpc_method_handler(deny_stream)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        if handler_call_details.method.startswith(HEALTH_PREFIX):
            return await continuation(handler_call_details)
        for key, value in handler_call_details.invocation_metadata or ():
            if key == "authorization":
                given = value.encode() if isinstance(value, str) else value
                if hmac.compare_digest(given, self._expected):
                    return await continuation(handler_call_details)
        self._on_refused()
        handler = await continuation(handler_call_details)
        if handler is not None and handler.request_streaming:
            return self._deny_stream
        return self._deny_unary
