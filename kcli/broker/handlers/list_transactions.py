"""ListTransactions: v0-1

Behaviour: every transactional id this broker's coordinator holds (none in the Dead state), with
its producer id and state, filtered by state names and producer ids when given and (v1) by a
duration: only transactions open longer than it. A state filter that names no state comes back
in ``unknown_state_filters``; while a ``__transaction_state`` partition loads the answer is
COORDINATOR_LOAD_IN_PROGRESS.

With an authorizer only the transactional ids the principal may DESCRIBE are listed, as in Kafka
3.x.

Version notes: v0 is flexible; v1 adds the duration filter.
"""

from __future__ import annotations

from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.LIST_TRANSACTIONS
VERSIONS = (0, 1)


def handle(ctx, request):
    coordinator = ctx.broker.transaction_coordinator
    error, found, unknown = coordinator.list_transactions(request.state_filters, request.producer_id_filters, getattr(request, "duration_filter", -1))
    if ctx.authorizing:  # only the transactional ids the principal may describe
        found = [m for m in found if ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, m.transactional_id, log_if_denied=False)]
    return {
        "error_code": error,
        "unknown_state_filters": unknown,
        "transaction_states": [
            {"transactional_id": m.transactional_id, "producer_id": m.producer_id, "transaction_state": m.state.kafka_name} for m in found
        ],
    }
