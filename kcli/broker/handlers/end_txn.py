"""EndTxn: v0-4

Behaviour: commits or aborts the open transaction of a transactional id. The decision
(PrepareCommit or PrepareAbort) is written to ``__transaction_state``, then the COMMIT or ABORT
markers to every partition of the transaction (and to ``__consumer_offsets`` for its offsets),
then CompleteCommit or CompleteAbort; the answer follows the decision. Errors:
INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (a stale epoch, including after the coordinator
aborted the transaction on its timeout; v0-1: INVALID_PRODUCER_EPOCH), INVALID_TXN_STATE (no
transaction open, or the opposite of the decision already taken), CONCURRENT_TRANSACTIONS (the
markers are still being written), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS. Repeating the
decision just completed answers NONE.

With an authorizer the transactional id needs WRITE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), as in
Kafka 2.8.

Version notes: v2 may answer PRODUCER_FENCED; v3 is flexible; v4 may answer
TRANSACTION_ABORTABLE.
"""

from __future__ import annotations

from kcli.broker.handlers._completion import Completion, answer
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.END_TXN
VERSIONS = (0, 4)


def handle(ctx, request):
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return {"error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    done = Completion()
    ctx.broker.transaction_coordinator.end_txn(request.transactional_id, request.producer_id, request.producer_epoch, request.committed, done)
    return answer(done, lambda error: {"error_code": _known_to_version(ctx, error)})


def _known_to_version(ctx, error: ErrorCode) -> ErrorCode:
    """PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2."""
    return ErrorCode.INVALID_PRODUCER_EPOCH if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2 else error
