"""InitProducerId: v0-5

Behaviour: an idempotent producer (no transactional id) gets a new producer id with epoch 0 on
every call, including the epoch-bump form of v3+ (KIP-360), which for a non-transactional
producer Kafka also answers with a fresh id. Ids come in blocks claimed from the metadata tree
(``producer_ids``). A transactional id answers COORDINATOR_NOT_AVAILABLE: kcli has no
transaction coordinator yet (SKIPPED.md).

Version notes: v2 is flexible; v3 adds producer_id and producer_epoch for epoch bumps.
"""

from __future__ import annotations

from kcli.errors import ErrorCode, KcliError

API_KEY = 22
VERSIONS = (0, 5)


def handle(ctx, request):
    if request.transactional_id is not None:
        return {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "producer_id": -1, "producer_epoch": -1}
    try:
        producer_id = ctx.broker.producer_ids.generate()
    except KcliError as e:
        return {"error_code": e.error_code, "producer_id": -1, "producer_epoch": -1}
    return {"producer_id": producer_id, "producer_epoch": 0}
