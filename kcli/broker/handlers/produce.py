"""Produce: v3-11

Behaviour: each partition's records are appended as the bytes that arrived (validated, offsets and
leader epoch patched in place) to the partition's log. ``acks`` must be 0, 1 or -1
(INVALID_REQUIRED_ACKS otherwise); with -1 the in-sync replicas must number at least
``min.insync.replicas`` (NOT_ENOUGH_REPLICAS). A partition the broker does not host answers
UNKNOWN_TOPIC_OR_PARTITION; an internal topic (``__consumer_offsets``, ...) answers
INVALID_TOPIC_EXCEPTION, as only the broker writes there; a batch the log rejects answers the error its failure carries
(CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_TIMESTAMP,
OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, ...) with its message; a disk error
(a full disk, an offline log dir) answers KAFKA_STORAGE_ERROR and leaves nothing written. A
transactional batch to a partition its transaction did not add answers INVALID_TXN_STATE
(``transactions/verification``; when another broker coordinates the transactional id, it is asked
first, once for the whole request). A retried batch of
an idempotent producer answers the offsets of its first append. With acks=0 nothing is answered;
a failure closes the connection, as Kafka does, so the producer notices.

With an authorizer (Kafka 2.8's checks): transactional batches need WRITE on the transactional id
(else every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED), idempotent ones
IDEMPOTENT_WRITE on the cluster (CLUSTER_AUTHORIZATION_FAILED), and each topic WRITE
(TOPIC_AUTHORIZATION_FAILED for its partitions, the others appended).

The handler reads the request and writes the answer; the replica manager (``append_records``)
looks each partition up, appends and, with acks=-1, answers once the in-sync replicas have the
records (at once while the ISR is the leader alone).

Validation never starves other connections: a request carrying more than one compressed batch
is handled by the connection's task, which yields to the event loop after each compressed
partition, so other clients are served between them (the connection's later requests still wait
their turn). What one compressed batch may cost is bounded by the log validator (its records'
declared lengths against its record count and ``max.message.bytes``).

Version notes: v3 is the first with magic v2 batches only (older versions, with message sets,
are not served); log_start_offset from v5, record_errors and error_message from v8.
"""

from __future__ import annotations

import asyncio

from kcli.broker.replica.delayed_produce import PartitionResponse
from kcli.broker.transactions.verification import coordinator_is_remote, verify_remotely, verify_transactional_produce
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import ATTRIBUTES_OFFSET, HEADER_SIZE_UP_TO_MAGIC, RecordBatch, peek_batch_header, single_batch_header

API_KEY = ApiKey.PRODUCE
VERSIONS = (3, 11)

_ATTRIBUTES_LOW_BYTE = ATTRIBUTES_OFFSET + 1  # attributes are a big-endian int16


def handle(ctx, request):
    denied: frozenset[str] = frozenset()
    if ctx.authorizing:
        refused = _refusal(ctx, request)
        if refused is not None:
            return _answer(ctx, request, [], refused)
        allowed = ctx.filter_by_authorized(AclOperation.WRITE, ResourceType.TOPIC, (topic.name for topic in request.topic_data))
        denied = frozenset(topic.name for topic in request.topic_data if topic.name not in allowed)
    if request.transactional_id is not None and coordinator_is_remote(ctx.broker, request.transactional_id):
        return _handle_verified_remotely(ctx, request, denied)
    if _compressed_batches(request) > 1:
        return _handle_yielding(ctx, request, denied)
    entries = _entries(request, denied)
    return _answer(ctx, request, _append(ctx, request, entries) if entries else [], denied)


def _refusal(ctx, request) -> ErrorCode | None:
    """Kafka 2.8's checks of the whole request: transactional batches need WRITE on the
    transactional id, idempotent ones IDEMPOTENT_WRITE on the cluster."""
    batches = [single_batch_header(data.records) for topic in request.topic_data for data in topic.partition_data]
    if any(batch is not None and batch.is_transactional for batch in batches):
        transactional_id = request.transactional_id
        if transactional_id is None or not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif any(batch is not None and batch.producer_id >= 0 for batch in batches):
        if not ctx.authorize_cluster(AclOperation.IDEMPOTENT_WRITE):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return None


async def _handle_verified_remotely(ctx, request, denied):
    """A transactional request whose coordinator is another broker: it verifies first."""
    replicas = ctx.broker.replica_manager
    candidates = []
    for topic in request.topic_data:
        if topic.name in denied:
            continue
        for data in topic.partition_data:
            try:
                candidates.append((replicas.get_partition_or_error(topic.name, data.index), single_batch_header(data.records)))
            except KcliError:
                pass  # the append answers the partition's error
    remote = await verify_remotely(ctx.broker, request.transactional_id, candidates)
    entries = _entries(request, denied)
    return _answer(ctx, request, await _wait(_append(ctx, request, entries, remote)) if entries else [], denied)


async def _handle_yielding(ctx, request, denied):
    """One partition at a time, yielding to the event loop after each compressed one."""
    answers = []
    for entry in _entries(request, denied):
        answers.append(_append(ctx, request, [entry]))
        if _is_compressed(entry[1]):
            await asyncio.sleep(0)
    responses = []
    for answer in answers:
        responses.extend(await _wait(answer))
    return _answer(ctx, request, responses, denied)


def _entries(request, denied: frozenset[str] = frozenset()) -> list:
    """The request's (partition, records) to append: those of the topics not refused."""
    return [((topic.name, data.index), data.records) for topic in request.topic_data if topic.name not in denied for data in topic.partition_data]


def _append(ctx, request, entries, remote=None):
    """The replica manager's answers for ``entries``: a list when it answered at once, else a
    future it completes."""
    broker = ctx.broker
    answered = []
    future = None

    def prepare(partition, records):
        batch = single_batch_header(records)  # the one read of its header, over the request's bytes
        _check_single_batch(records, batch)
        verify_transactional_produce(broker, request.transactional_id, partition, batch, remote)
        return records if batch is None else batch

    def respond(responses):
        if future is None:
            answered.append(responses)
        elif not future.done():
            future.set_result(responses)

    timeout_ms = int(request.timeout.total_seconds() * 1000)
    broker.replica_manager.append_records(entries, request.acks, timeout_ms, AppendOrigin.CLIENT, respond, prepare=prepare)
    if answered:
        return answered[0]
    future = asyncio.get_running_loop().create_future()
    return future


async def _wait(answer):
    return answer if isinstance(answer, list) else await answer


def _answer(ctx, request, responses, denied: frozenset[str] | ErrorCode = frozenset()):
    """The Produce response for the replica manager's answers, one per partition appended in the
    request's order; a partition of a ``denied`` topic answers TOPIC_AUTHORIZATION_FAILED, and
    every partition ``denied``'s code when it is one (the whole request refused). None with
    acks=0, where a failure closes the connection instead; a coroutine while they are still to
    come."""
    if not isinstance(responses, list):
        return _answer_later(ctx, request, responses, denied)
    answers = iter(responses)
    refused = None if isinstance(denied, frozenset) else PartitionResponse(denied)
    topic_refused = PartitionResponse(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    ordered = []
    for topic in request.topic_data:
        for data in topic.partition_data:
            if refused is not None:
                ordered.append(refused)
            elif topic.name in denied:
                ordered.append(topic_refused)
            else:
                ordered.append(next(answers)[1])
    if request.acks == 0:
        ctx.close_connection = any(response.error_code != ErrorCode.NONE for response in ordered)
        return None
    answers = iter(ordered)
    topics = []
    for topic in request.topic_data:
        partition_responses = []
        for data in topic.partition_data:
            response = next(answers)
            result = {
                "index": data.index,
                "base_offset": response.base_offset,
                "log_append_time": response.log_append_time,
                "log_start_offset": response.log_start_offset,
            }
            if response.error_code != ErrorCode.NONE:
                result["error_code"] = response.error_code
                result["error_message"] = response.error_message
                result["record_errors"] = [
                    {"batch_index": index, "batch_index_error_message": message} for index, message in response.record_errors
                ]
            partition_responses.append(result)
        topics.append({"name": topic.name, "partition_responses": partition_responses})
    return {"responses": topics}


async def _answer_later(ctx, request, future, denied):
    return _answer(ctx, request, await future, denied)


def _is_compressed(records: bytes | memoryview | None) -> bool:
    """Whether the batch's attributes name a codec (the low bits of the byte at offset 22)."""
    return records is not None and len(records) > _ATTRIBUTES_LOW_BYTE and records[_ATTRIBUTES_LOW_BYTE] & 0x07 != 0


def _compressed_batches(request) -> int:
    return sum(_is_compressed(data.records) for topic in request.topic_data for data in topic.partition_data)


def _check_single_batch(records: bytes | memoryview | None, batch: RecordBatch | None) -> None:
    """Produce v3+ carries exactly one v2 batch per partition (Kafka's request validation)."""
    if batch is not None:
        size = batch.size_in_bytes
    else:
        size = peek_batch_header(records, 0)[1] if records is not None and len(records) >= HEADER_SIZE_UP_TO_MAGIC else -1
    if size != (0 if records is None else len(records)):
        raise KafkaError(ErrorCode.INVALID_RECORD, "Produce requests with version 3 and above must contain exactly one record batch per partition")
