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
import logging

from kcli.metadata.topic_names import is_internal
from kcli.broker.transactions.verification import coordinator_is_remote, verify_remotely, verify_transactional_produce
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.storage.records import ATTRIBUTES_OFFSET, HEADER_SIZE_UP_TO_MAGIC, RecordBatch, peek_batch_header, single_batch_header

API_KEY = 0
VERSIONS = (3, 11)

log = logging.getLogger(__name__)

_ATTRIBUTES_LOW_BYTE = ATTRIBUTES_OFFSET + 1  # attributes are a big-endian int16


def handle(ctx, request):
    if request.transactional_id is not None and coordinator_is_remote(ctx.broker, request.transactional_id):
        return _handle_verified_remotely(ctx, request)
    if _compressed_batches(request) > 1:
        return _handle_yielding(ctx, request)
    responses = []
    state = _State()
    for topic in request.topic_data:
        partition_responses = [_append(ctx, request, topic.name, data, state) for data in topic.partition_data]
        responses.append({"name": topic.name, "partition_responses": partition_responses})
    return _answer(ctx, request.acks, responses, state)


async def _handle_verified_remotely(ctx, request):
    """A transactional request whose coordinator is another broker: it verifies first."""
    replicas = ctx.broker.replica_manager
    candidates = []
    for topic in request.topic_data:
        for data in topic.partition_data:
            try:
                candidates.append((replicas.partition(topic.name, data.index), single_batch_header(data.records)))
            except KcliError:
                pass  # the append answers the partition's error
    remote = await verify_remotely(ctx.broker, request.transactional_id, candidates)
    responses = []
    state = _State()
    for topic in request.topic_data:
        partition_responses = [_append(ctx, request, topic.name, data, state, remote) for data in topic.partition_data]
        responses.append({"name": topic.name, "partition_responses": partition_responses})
    return _answer(ctx, request.acks, responses, state)


async def _handle_yielding(ctx, request):
    responses = []
    state = _State()
    for topic in request.topic_data:
        partition_responses = []
        for data in topic.partition_data:
            partition_responses.append(_append(ctx, request, topic.name, data, state))
            if _is_compressed(data.records):
                await asyncio.sleep(0)
        responses.append({"name": topic.name, "partition_responses": partition_responses})
    return _answer(ctx, request.acks, responses, state)


class _State:
    failed = False


def _answer(ctx, acks, responses, state):
    if acks == 0:
        ctx.close_connection = state.failed
        return None
    return {"responses": responses}


def _append(ctx, request, topic_name, data, state, remote=None):
    replicas = ctx.broker.replica_manager
    acks = request.acks
    result = {"index": data.index, "base_offset": -1, "log_append_time": -1, "log_start_offset": -1}
    try:
        if acks not in (0, 1, -1):
            raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS)
        if is_internal(topic_name):
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic_name}")
        partition = replicas.partition(topic_name, data.index)
        records = data.records  # a view of the request's bytes: checked and patched in place
        batch = single_batch_header(records)  # the one read of its header
        _check_single_batch(records, batch)
        verify_transactional_produce(ctx.broker, request.transactional_id, partition, batch, remote)
        info = partition.append(records if batch is None else batch, acks)
        result["base_offset"] = info.first_offset
        result["log_append_time"] = info.log_append_time
        result["log_start_offset"] = info.log_start_offset
        replicas.notify((topic_name, data.index))
    except KcliError as e:
        state.failed = True
        result["error_code"] = e.error_code
        result["error_message"] = str(e) or None
        result["record_errors"] = [
            {"batch_index": index, "batch_index_error_message": message} for index, message in getattr(e, "record_errors", ())
        ]
        log.debug("Produce to %s-%d failed: %s", topic_name, data.index, e)
    except OSError as e:
        state.failed = True  # the log turns its own disk errors into KafkaStorageError; this is a safety net
        result["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
        result["error_message"] = str(e)
        log.warning("Produce to %s-%d failed: %s", topic_name, data.index, e)
    except Exception:
        state.failed = True
        result["error_code"] = ErrorCode.UNKNOWN_SERVER_ERROR
        log.exception("Produce to %s-%d failed unexpectedly", topic_name, data.index)
    return result


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
