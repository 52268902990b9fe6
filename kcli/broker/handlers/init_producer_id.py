"""InitProducerId: v0-5

Behaviour: an idempotent producer (no transactional id) gets a new producer id with epoch 0 on
every call, including the epoch-bump form of v3+ (KIP-360), which for a non-transactional
producer Kafka also answers with a fresh id. Ids come in blocks claimed from the metadata tree
(``producer_ids``). A transactional id goes to the transaction coordinator
(``broker/transactions``): an empty id answers INVALID_REQUEST; a ``transaction_timeout_ms`` not
in (0, ``transaction.max.timeout.ms``] INVALID_TRANSACTION_TIMEOUT; an id of a
``__transaction_state`` partition this broker does not lead NOT_COORDINATOR (loading:
COORDINATOR_LOAD_IN_PROGRESS). A known id gets its epoch bumped, which fences its older
producer; an id with an open transaction has it aborted under a bumped epoch first and answers
CONCURRENT_TRANSACTIONS, so the client retries; a transaction still writing its markers answers
CONCURRENT_TRANSACTIONS too. With v3+'s producer id and epoch, a stale pair answers
PRODUCER_FENCED (v0-3: INVALID_PRODUCER_EPOCH, which those versions know); a retry of the last
bump gets the same epoch again; an exhausted epoch gets a new producer id.

With an authorizer a transactional id needs WRITE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an
idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic
(CLUSTER_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v2 is flexible; v3 adds producer_id and producer_epoch for epoch bumps; v4 may
answer PRODUCER_FENCED.
"""

from __future__ import annotations

from kcli.broker.groups.wire import duration_ms
from kcli.broker.handlers._completion import Completion, answer
from kcli.errors import ErrorCode, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.INIT_PRODUCER_ID
VERSIONS = (0, 5)


def handle(ctx, request):
    if request.transactional_id is not None and not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return {"error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "producer_id": -1, "producer_epoch": -1}
    if request.transactional_id is None and ctx.authorizing and not (
        ctx.authorize_cluster(AclOperation.IDEMPOTENT_WRITE, log_if_denied=False) or ctx.authorize_by_resource_type(AclOperation.WRITE, ResourceType.TOPIC)
    ):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "producer_id": -1, "producer_epoch": -1}
    if request.transactional_id is None:
        try:
            producer_id = ctx.broker.producer_ids.generate()
        except KcliError as e:
            return {"error_code": e.error_code, "producer_id": -1, "producer_epoch": -1}
        return {"producer_id": producer_id, "producer_epoch": 0}
    coordinator = ctx.broker.transaction_coordinator
    producer_id = getattr(request, "producer_id", -1)
    expected = None if producer_id == -1 else (producer_id, request.producer_epoch)
    done = Completion()
    try:
        coordinator.init_producer_id(request.transactional_id, duration_ms(request.transaction_timeout), expected, done)
    except KcliError as e:
        done((ErrorCode(e.error_code), -1, -1))
    return answer(done, lambda result: _response(ctx, *result))


def _response(ctx, error: ErrorCode, producer_id: int, epoch: int) -> dict:
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 4:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return {"error_code": error, "producer_id": producer_id, "producer_epoch": epoch}
