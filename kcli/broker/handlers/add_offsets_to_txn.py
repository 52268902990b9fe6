"""AddOffsetsToTxn: v0-4

Behaviour: the group's ``__consumer_offsets`` partition joins the transaction, so its
TxnOffsetCommit offsets are committed or dropped with it. Errors as AddPartitionsToTxn's
(PRODUCER_FENCED answers INVALID_PRODUCER_EPOCH before v2); an empty group id answers
INVALID_GROUP_ID.

With an authorizer the transactional id needs WRITE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and the
group READ (GROUP_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v2 may answer PRODUCER_FENCED; v3 is flexible; v4 may answer
TRANSACTION_ABORTABLE.
"""

from __future__ import annotations

from kcli.broker.handlers._completion import Completion, answer
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN
VERSIONS = (0, 4)


def handle(ctx, request):
    broker = ctx.broker
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return {"error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    if not request.group_id:
        return {"error_code": ErrorCode.INVALID_GROUP_ID}
    partitions = broker.group_coordinator.config.offsets_partitions
    done = Completion()
    broker.transaction_coordinator.add_offsets(request.transactional_id, request.producer_id, request.producer_epoch, request.group_id, partitions, done)
    return answer(done, lambda error: {"error_code": _known_to_version(ctx, error)})


def _known_to_version(ctx, error: ErrorCode) -> ErrorCode:
    """PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2."""
    return ErrorCode.INVALID_PRODUCER_EPOCH if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2 else error
