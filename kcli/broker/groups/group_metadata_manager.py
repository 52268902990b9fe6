"""The records of ``__consumer_offsets``: writing them as a batch, replaying a partition
(Kafka's GroupMetadataManager; the group cache itself is the ``GroupCoordinator``'s).

Kafka 3.9's classic coordinator writes, as version-prefixed keys and values
(``protocol/coordinator_records``):

    offset commit   OffsetCommitKey v1 (group, topic, partition) -> OffsetCommitValue v3
                    (v1 when the commit carries an explicit expire timestamp)
    group           GroupMetadataKey v2 (group) -> GroupMetadataValue v3 (protocol type,
                    generation, protocol, leader, state timestamp, members with their
                    subscription and assignment bytes)
    deletion        the same key with a null value (tombstone)

Each write is one magic-2 batch, CreateTime, no producer id, compressed with
``offsets.topic.compression.codec``, appended through the partition like a produce with
acks=all. The batch is a ``records.MemoryRecordsBuilder`` (the bytes ``build_batch`` would write, with what
its builder knows of them), so the log gives it offsets without reading its records again; an
offset commit's records are encoded straight into it (``offset_commit_batch``).

Replay reads a partition from its log start to its end and keeps, per key, the last record: a
tombstone removes. Transactional commits wait for their producer's COMMIT marker (an ABORT drops
them), as Kafka's loader does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcli.broker.groups.group import ClassicGroup, GroupState, TopicPartition
from kcli.broker.groups.member import ClassicGroupMember
from kcli.broker.groups.offsets import CommittedOffset, OffsetAndMetadata
from kcli.broker.replica.delayed_produce import PartitionResponse
from kcli.metadata.topic_names import GROUP_METADATA_TOPIC_NAME
from kcli.errors import ErrorCode, KcliError
from kcli.protocol import coordinator_records as records_schema
from kcli.storage.compression import CompressionType
from kcli.storage.log import Log
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import (
    NO_TIMESTAMP,
    ControlType,
    MemoryRecordsBuilder,
    NewRecord,
    build_batch,
    iter_batches,
    parse_control_record,
)

log = logging.getLogger(__name__)

GroupTopicPartition = tuple[str, str, int]  # (group, topic, partition)


# -- writing --------------------------------------------------------------------------------


def offset_commit_record(group_id: str, tp: TopicPartition, value: OffsetAndMetadata, timestamp: int) -> NewRecord:
    key = records_schema.encode_offset_commit_key(group_id, tp[0], tp[1])
    encoded = records_schema.encode_offset_commit_value(
        value.offset,
        value.metadata,
        value.commit_timestamp,
        leader_epoch=-1 if value.leader_epoch is None else value.leader_epoch,
        expire_timestamp=value.expire_timestamp,
    )
    return NewRecord(key, encoded, timestamp)


def offset_commit_batch(
    group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata], timestamp: int, compression: CompressionType
) -> MemoryRecordsBuilder:
    """The batch of ``offset_commit_record`` for each of ``offsets``, in order, built in one pass
    (byte for byte what ``build_records`` makes of those records)."""
    key = records_schema.encode_offset_commit_key
    value = records_schema.encode_offset_commit_value
    return MemoryRecordsBuilder(
        [
            (key(group_id, topic, partition), value(offset, metadata, committed, -1 if epoch is None else epoch, expire))
            for (topic, partition), (offset, epoch, metadata, committed, expire) in offsets.items()
        ],
        timestamp,
        compression,
    )


def offset_tombstone(group_id: str, tp: TopicPartition, timestamp: int) -> NewRecord:
    return NewRecord(records_schema.encode_offset_commit_key(group_id, tp[0], tp[1]), None, timestamp)


def group_metadata_record(group: ClassicGroup, assignment: Mapping[str, bytes], timestamp: int) -> NewRecord:
    """The group as Kafka stores it after a rebalance: every member with its subscription for the
    group's protocol and its assignment."""
    members = []
    for member in group.members.values():
        members.append({
            "MemberId": member.member_id,
            "GroupInstanceId": member.group_instance_id,
            "ClientId": member.client_id,
            "ClientHost": member.client_host,
            "RebalanceTimeout": member.rebalance_timeout_ms,
            "SessionTimeout": member.session_timeout_ms,
            "Subscription": member.metadata(group.protocol_name),
            "Assignment": assignment[member.member_id],
        })
    value = {
        "ProtocolType": group.protocol_type or "",
        "Generation": group.generation_id,
        "Protocol": group.protocol_name,
        "Leader": group.leader_id,
        "CurrentStateTimestamp": -1 if group.current_state_timestamp is None else group.current_state_timestamp,
        "Members": members,
    }
    return NewRecord(records_schema.encode_group_metadata_key(group.group_id), records_schema.encode_group_metadata_value(value), timestamp)


def group_tombstone(group_id: str, timestamp: int) -> NewRecord:
    return NewRecord(records_schema.encode_group_metadata_key(group_id), None, timestamp)


def build_records(records: list[NewRecord], compression: CompressionType) -> MemoryRecordsBuilder:
    """One batch of ``records`` (the coordinator's: one timestamp, no headers): the bytes
    ``build_batch`` writes, as a ``MemoryRecordsBuilder`` the log appends without reading it again."""
    timestamp = records[0].timestamp if records else NO_TIMESTAMP
    if any(r.timestamp != timestamp or r.headers for r in records):
        raise ValueError("the records of one coordinator write share a timestamp and have no headers")
    return MemoryRecordsBuilder([(r.key, r.value) for r in records], timestamp, compression)


class GroupMetadataManager:
    """Appends coordinator records to the ``__consumer_offsets`` partitions this broker leads
    (Kafka's GroupMetadataManager.storeGroup and storeOffsets)."""

    def __init__(self, replica_manager: Any, compression: CompressionType) -> None:
        self.replica_manager = replica_manager
        self.compression = compression

    def log(self, partition: int) -> Log | None:
        hosted = self.replica_manager.get(GROUP_METADATA_TOPIC_NAME, partition)
        return None if hosted is None else hosted.log

    def append(self, partition: int, records: list[NewRecord], appended: Callable[[PartitionResponse], None]) -> None:
        """Write one batch of ``records``; ``appended`` gets the partition's answer."""
        self.append_batch(partition, build_records(records, self.compression), appended)

    def append_offset_commits(
        self, partition: int, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata], timestamp: int, appended: Callable[[PartitionResponse], None]
    ) -> None:
        """Write the group's commits as one batch (``offset_commit_batch``)."""
        self.append_batch(partition, offset_commit_batch(group_id, offsets, timestamp, self.compression), appended)

    def append_transactional(
        self, partition: int, records: list[NewRecord], producer_id: int, producer_epoch: int, appended: Callable[[PartitionResponse], None]
    ) -> None:
        """Write a transaction's offset commits as one transactional batch of its producer (the
        coordinator's append: the epoch is checked, the sequence is not)."""
        batch = build_batch(
            records, compression=self.compression, producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=0, transactional=True
        )
        self.replica_manager.append_for_coordinator((GROUP_METADATA_TOPIC_NAME, partition), batch, AppendOrigin.COORDINATOR, appended)

    def append_batch(self, partition: int, batch: MemoryRecordsBuilder, appended: Callable[[PartitionResponse], None]) -> None:
        """Append a batch built here through the replica manager with acks=-1 (Kafka's
        appendForGroup); ``appended`` gets the partition's answer once its in-sync replicas have
        the batch, or at once when the append fails."""
        self.replica_manager.append_for_coordinator((GROUP_METADATA_TOPIC_NAME, partition), batch, AppendOrigin.CLIENT, appended)


def append_error(error_code: int, *, offsets: bool) -> ErrorCode:
    """The error a failed coordinator write answers with (Kafka's conversions)."""
    code = ErrorCode(error_code)
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE if offsets else ErrorCode.UNKNOWN_SERVER_ERROR
    if code == ErrorCode.REQUEST_TIMED_OUT and not offsets:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return code


# -- replaying ------------------------------------------------------------------------------


@dataclass
class ReplayedPartition:
    """What one offsets partition holds: committed offsets, the last metadata of each group, and
    the groups whose metadata was deleted."""

    offsets: dict[GroupTopicPartition, CommittedOffset] = field(default_factory=dict)
    pending: dict[int, dict[GroupTopicPartition, CommittedOffset]] = field(default_factory=dict)
    groups: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)  # group -> (value version, value)
    removed_groups: set[str] = field(default_factory=set)
    records: int = 0
    skipped: int = 0


def read_batches(partition_log: Log, buffer_size: int) -> Iterator[Any]:
    """Every batch of the log from its start to its end, read ``buffer_size`` bytes at a time."""
    offset = partition_log.log_start_offset
    while offset < partition_log.log_end_offset:
        data = partition_log.read(offset, buffer_size).read()
        if not data:
            return
        progressed = False
        for batch in iter_batches(data):
            if batch.next_offset > offset:
                offset = batch.next_offset
                progressed = True
            yield batch
        if not progressed:
            return


def replay(batches: Iterable[Any], partition_name: str = GROUP_METADATA_TOPIC_NAME) -> ReplayedPartition:
    result = ReplayedPartition()
    for batch in batches:
        producer_id = getattr(batch, "producer_id", -1)
        if getattr(batch, "is_control", False):
            _replay_marker(result, batch, producer_id)
            continue
        transactional = getattr(batch, "is_transactional", False)
        for record in batch.records():
            try:
                _replay_record(result, record, transactional, producer_id, batch.base_offset)
                result.records += 1
            except KcliError as e:
                result.skipped += 1
                log.warning("Skipping the record at offset %d of %s while loading groups and offsets: %s", record.offset, partition_name, e)
    return result


def _replay_marker(result: ReplayedPartition, batch: Any, producer_id: int) -> None:
    for record in batch.records():
        control_type, _ = parse_control_record(record.key, record.value, record.offset)
        if control_type == ControlType.COMMIT:
            for key, committed in result.pending.get(producer_id, {}).items():
                current = result.offsets.get(key)
                if current is None or current.older_than(committed):
                    result.offsets[key] = committed
        result.pending.pop(producer_id, None)
        return


def _replay_record(result: ReplayedPartition, record: Any, transactional: bool, producer_id: int, batch_offset: int) -> None:
    if record.key is None:
        raise KcliError("a record without a key")
    kind, _, key = records_schema.decode_offsets_key(record.key)
    if kind == records_schema.OFFSET_COMMIT:
        gtp = (key["Group"], key["Topic"], key["Partition"])
        target = result.pending.setdefault(producer_id, {}) if transactional else result.offsets
        if record.value is None:
            target.pop(gtp, None)
        else:
            _, value = records_schema.decode_offset_commit_value(record.value)
            target[gtp] = CommittedOffset(offset_and_metadata(value), batch_offset)
    elif kind == records_schema.GROUP_METADATA:
        group_id = key["Group"]
        if record.value is None:
            result.groups.pop(group_id, None)
            result.removed_groups.add(group_id)
        else:
            result.groups[group_id] = records_schema.decode_group_metadata_value(record.value)
            result.removed_groups.discard(group_id)
    else:
        log.warning("Unknown message key of type %s while loading offsets and group metadata; ignoring it", kind)


def offset_and_metadata(value: Mapping[str, Any]) -> OffsetAndMetadata:
    leader_epoch = value.get("LeaderEpoch", -1)
    expire = value.get("ExpireTimestamp", -1)
    return OffsetAndMetadata(
        offset=value["Offset"],
        leader_epoch=None if leader_epoch == -1 else leader_epoch,
        metadata=value["Metadata"],
        commit_timestamp=value["CommitTimestamp"],
        expire_timestamp=None if expire == -1 else expire,
    )


def group_from_record(group_id: str, version: int, value: Mapping[str, Any]) -> ClassicGroup:
    """A group as stored: Stable with its members, or Empty without (Kafka's ``loadGroup``)."""
    protocol_type = value["ProtocolType"] or None
    members = []
    for m in value["Members"]:
        session_timeout = m["SessionTimeout"]
        members.append(ClassicGroupMember(
            member_id=m["MemberId"],
            group_instance_id=m.get("GroupInstanceId"),
            client_id=m["ClientId"],
            client_host=m["ClientHost"],
            rebalance_timeout_ms=session_timeout if version == 0 else m.get("RebalanceTimeout", -1),
            session_timeout_ms=session_timeout,
            protocol_type=value["ProtocolType"],
            protocols=[(value["Protocol"], bytes(m["Subscription"]))],
            assignment=bytes(m["Assignment"]),
        ))
    timestamp = value.get("CurrentStateTimestamp", -1)
    group = ClassicGroup(
        group_id,
        state=GroupState.STABLE if members else GroupState.EMPTY,
        current_state_timestamp=None if timestamp == -1 else timestamp,
        protocol_type=protocol_type,
        protocol_name=value["Protocol"],
        generation_id=value["Generation"],
    )
    for member in members:
        group.add(member)
    group.leader_id = value["Leader"]
    group.subscribed_topics = group.compute_subscribed_topics()
    return group
