"""FindCoordinator: v0-5

Behaviour: in single-process mode this broker coordinates every consumer group, so a group key
is answered with this broker's advertised address. The group APIs themselves (JoinGroup,
OffsetCommit, ...) are not served yet (SKIPPED.md), so a client that goes on to use the group
learns that from ApiVersions. Transaction keys answer COORDINATOR_NOT_AVAILABLE (no transaction
coordinator); an unknown key type answers INVALID_REQUEST.

Version notes: v1 adds the key type and error messages; v3 is flexible; v4 looks up a batch of
keys at once.
"""

from __future__ import annotations

from kcli.errors import ErrorCode

API_KEY = 10
VERSIONS = (0, 5)

GROUP, TRANSACTION = 0, 1


async def handle(ctx, request):
    key_type = getattr(request, "key_type", GROUP)
    if ctx.api_version >= 4:
        return {"coordinators": [dict(key=key, **_coordinator(ctx.broker, key_type)) for key in request.coordinator_keys]}
    return _coordinator(ctx.broker, key_type)


def _coordinator(broker, key_type: int) -> dict:
    if key_type == GROUP:
        me = next((b for b in broker.live_brokers() if b.id == broker.id), None)
        if me is not None:
            return {"node_id": me.id, "host": me.host, "port": me.port}
        code, message = ErrorCode.COORDINATOR_NOT_AVAILABLE, "The broker is not registered yet."
    elif key_type == TRANSACTION:
        code, message = ErrorCode.COORDINATOR_NOT_AVAILABLE, "This broker has no transaction coordinator."
    else:
        code, message = ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}"
    return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}
