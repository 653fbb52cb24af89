"""The gRPC side: actor streams in, actions out.

In: each actor's ``Act`` stream (a hello, then ``Steps`` messages), or IMPALA mode's ``Learn``
stream of unrolls and ``GetParams`` calls. Here a row is refused or accepted: the token
(``auth``), the handshake and its limits (``service``), each message's shapes, dtypes, slots and
values (``protocol``), env slots across reconnects (``slots``), IMPALA mode's uploads and
versioned parameters (``uploads``, ``params``), and the server itself with health and TLS
(``endpoint``). Out: ``Rows`` to batching; actions (or ``Accepted``) back to the actor.
"""
