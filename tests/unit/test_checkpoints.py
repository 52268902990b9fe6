"""Broker text files (checkpoints, partition.metadata, meta.properties, clean-shutdown marker)."""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcli.errors import CorruptCheckpointError
from kcli.storage.checkpoints import (
    CLEAN_SHUTDOWN_FILE,
    has_clean_shutdown_marker,
    read_clean_shutdown_broker_epoch,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    remove_clean_shutdown_marker,
    write_atomically,
    write_clean_shutdown_marker,
    write_leader_epoch_checkpoint,
    write_meta_properties,
    write_offset_checkpoint,
    write_partition_metadata,
)

topics = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=249)
partitions = st.integers(min_value=0, max_value=2**31 - 1)
offsets = st.integers(min_value=0, max_value=2**63 - 1)


# -- write_atomically -----------------------------------------------------------------------------


def test_write_atomically_leaves_no_tmp(tmp_path):
    target = tmp_path / "file"
    write_atomically(target, b"one")
    write_atomically(target, b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_write_atomically_overwrites_stale_tmp(tmp_path):
    target = tmp_path / "file"
    (tmp_path / "file.tmp").write_bytes(b"left over from a crash, longer than the new data")
    write_atomically(target, b"new")
    assert target.read_bytes() == b"new"
    assert not (tmp_path / "file.tmp").exists()


# -- offset checkpoints ---------------------------------------------------------------------------


def test_empty_offset_checkpoint_golden(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offset_checkpoint(path, {})
    assert path.read_bytes() == b"0\n0\n"
    assert read_offset_checkpoint(path) == {}


def test_offset_checkpoint_golden(tmp_path):
    path = tmp_path / "cleaner-offset-checkpoint"
    write_offset_checkpoint(path, {("__consumer_offsets", 31): 3, ("__consumer_offsets", 44): 9})
    assert path.read_bytes() == b"0\n2\n__consumer_offsets 31 3\n__consumer_offsets 44 9\n"


def test_missing_offset_checkpoint_reads_empty(tmp_path):
    assert read_offset_checkpoint(tmp_path / "replication-offset-checkpoint") == {}


@pytest.mark.parametrize("content", [b"", b"0\n", b"0"])
def test_empty_or_version_only_checkpoint_reads_empty(tmp_path, content):
    path = tmp_path / "log-start-offset-checkpoint"
    path.write_bytes(content)
    assert read_offset_checkpoint(path) == {}


def test_offset_checkpoint_splits_on_whitespace_runs(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_bytes(b"0\r\n2\r\nfoo \t 0   12\nbar 1 7  \n")
    assert read_offset_checkpoint(path) == {("foo", 0): 12, ("bar", 1): 7}


@given(st.dictionaries(st.tuples(topics, partitions), offsets, max_size=20))
def test_offset_checkpoint_round_trip(tmp_path_factory, offsets_map):
    path = tmp_path_factory.mktemp("ckpt") / "replication-offset-checkpoint"
    write_offset_checkpoint(path, offsets_map)
    assert read_offset_checkpoint(path) == offsets_map
    assert list(read_offset_checkpoint(path)) == list(offsets_map)


@pytest.mark.parametrize("topic", ["", "has space", "tab\there"])
def test_offset_checkpoint_refuses_unwritable_topic(tmp_path, topic):
    with pytest.raises(ValueError):
        write_offset_checkpoint(tmp_path / "c", {(topic, 0): 1})


CORRUPT_OFFSET_CHECKPOINTS = [
    (b"1\n0\n", "Unrecognized version of the checkpoint file ({path}): 1"),
    (b"x\n0\n", "Malformed line in checkpoint file ({path}): 'x'"),
    (b" 0\n0\n", "Malformed line in checkpoint file ({path}): ' 0'"),
    (b"0\nmany\n", "Malformed line in checkpoint file ({path}): 'many'"),
    (b"0\n1\nfoo 0\n", "Malformed line in checkpoint file ({path}): 'foo 0'"),
    (b"0\n1\nfoo 0 1 2\n", "Malformed line in checkpoint file ({path}): 'foo 0 1 2'"),
    (b"0\n1\n foo 0 1\n", "Malformed line in checkpoint file ({path}): ' foo 0 1'"),
    (b"0\n1\nfoo zero 1\n", "Malformed line in checkpoint file ({path}): 'foo zero 1'"),
    (b"0\n1\nfoo 0 1.5\n", "Malformed line in checkpoint file ({path}): 'foo 0 1.5'"),
    (b"0\n1\nfoo 0 1_0\n", "Malformed line in checkpoint file ({path}): 'foo 0 1_0'"),
    (b"0\n1\nfoo 2147483648 1\n", "Malformed line in checkpoint file ({path}): 'foo 2147483648 1'"),
    (b"0\n1\n\n", "Malformed line in checkpoint file ({path}): ''"),
    (b"0\n3\nfoo 0 1\nbar 0 2\n", "Expected 3 entries in checkpoint file ({path}), but found only 2"),
    (b"0\n1\nfoo 0 1\nbar 0 2\n", "Expected 1 entries in checkpoint file ({path}), but found only 2"),
]


@pytest.mark.parametrize(("content", "message"), CORRUPT_OFFSET_CHECKPOINTS)
def test_corrupt_offset_checkpoint(tmp_path, content, message):
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError) as caught:
        read_offset_checkpoint(path)
    assert str(caught.value) == message.format(path=path)


def test_checkpoint_that_is_not_utf8(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_bytes(b"0\n1\n\xff 0 1\n")
    with pytest.raises(CorruptCheckpointError, match=re.escape(str(path))):
        read_offset_checkpoint(path)


# -- leader-epoch-checkpoint ----------------------------------------------------------------------


def test_leader_epoch_checkpoint_golden(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(path, [(0, 0)])
    assert path.read_bytes() == b"0\n1\n0 0\n"
    assert read_leader_epoch_checkpoint(path) == [(0, 0)]


@given(st.lists(st.tuples(st.integers(0, 2**31 - 1), offsets), max_size=20))
def test_leader_epoch_checkpoint_round_trip(tmp_path_factory, entries):
    path = tmp_path_factory.mktemp("epochs") / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(path, entries)
    assert read_leader_epoch_checkpoint(path) == entries


def test_missing_leader_epoch_checkpoint_reads_empty(tmp_path):
    assert read_leader_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint") == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"7\n0\n", "Unrecognized version of the checkpoint file ({path}): 7"),
        (b"0\n1\n0 0 0\n", "Malformed line in checkpoint file ({path}): '0 0 0'"),
        (b"0\n1\nzero 0\n", "Malformed line in checkpoint file ({path}): 'zero 0'"),
        (b"0\n2\n0 0\n", "Expected 2 entries in checkpoint file ({path}), but found only 1"),
    ],
)
def test_corrupt_leader_epoch_checkpoint(tmp_path, content, message):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError) as caught:
        read_leader_epoch_checkpoint(path)
    assert str(caught.value) == message.format(path=path)


# -- partition.metadata ---------------------------------------------------------------------------

# Kafka's Uuid string is URL-safe base64 of the 16 big-endian bytes, without padding (test_common).
TOPIC_ID = uuid.UUID("14f08ca5-fce1-4ea6-ad36-080b8179e54a")
TOPIC_ID_TEXT = "FPCMpfzhTqatNggLgXnlSg"


def test_partition_metadata_golden(tmp_path):
    path = tmp_path / "partition.metadata"
    write_partition_metadata(path, TOPIC_ID)
    assert path.read_bytes() == b"version: 0\ntopic_id: FPCMpfzhTqatNggLgXnlSg"
    assert len(path.read_bytes()) == 43
    assert read_partition_metadata(path) == TOPIC_ID


@given(st.builds(lambda n: uuid.UUID(int=n), st.integers(1, 2**128 - 1)))
def test_partition_metadata_round_trip(tmp_path_factory, topic_id):
    path = tmp_path_factory.mktemp("pm") / "partition.metadata"
    write_partition_metadata(path, topic_id)
    assert read_partition_metadata(path) == topic_id


def test_partition_metadata_accepts_a_newer_version(tmp_path):
    path = tmp_path / "partition.metadata"
    path.write_bytes(b"version: 1\ntopic_id: FPCMpfzhTqatNggLgXnlSg\n")
    assert read_partition_metadata(path) == TOPIC_ID


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "Malformed line in checkpoint file ({path}): ''"),
        (b"version: 0", "Malformed line in checkpoint file ({path}): ''"),
        (b"version 0\ntopic_id: FPCMpfzhTqatNggLgXnlSg", "Malformed line in checkpoint file ({path}): 'version 0'"),
        (b"version: x\ntopic_id: FPCMpfzhTqatNggLgXnlSg", "Malformed line in checkpoint file ({path}): 'version: x'"),
        (b"version: -1\ntopic_id: FPCMpfzhTqatNggLgXnlSg", "Unrecognized version of partition metadata file ({path}): -1"),
        (b"version: 0\ntopic_id: nope", "Malformed line in checkpoint file ({path}): 'topic_id: nope'"),
        (b"version: 0\ntopic_id:FPCMpfzhTqatNggLgXnlSg", "Malformed line in checkpoint file ({path}): 'topic_id:FPCMpfzhTqatNggLgXnlSg'"),
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "Invalid topic ID in partition metadata file ({path})"),
    ],
)
def test_corrupt_partition_metadata(tmp_path, content, message):
    path = tmp_path / "partition.metadata"
    path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError) as caught:
        read_partition_metadata(path)
    assert str(caught.value) == message.format(path=path)


# -- meta.properties ------------------------------------------------------------------------------


def test_meta_properties_written_like_properties_store(tmp_path):
    path = tmp_path / "meta.properties"
    write_meta_properties(path, {"cluster.id": "5L6g3nShT-eMCtK--X86sw", "node.id": "1", "version": "1"})
    text = path.read_text()
    assert re.fullmatch(
        r"#\n#(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d\d \d\d:\d\d:\d\d \S+ \d{4}\n"
        r"cluster\.id=5L6g3nShT-eMCtK--X86sw\nnode\.id=1\nversion=1\n",
        text,
    )
    assert read_meta_properties(path) == {"cluster.id": "5L6g3nShT-eMCtK--X86sw", "node.id": "1", "version": "1"}


def test_meta_properties_reads_java_properties_syntax(tmp_path):
    path = tmp_path / "meta.properties"
    path.write_text(
        "#\n#Sun Feb 27 16:00:38 ICT 2022\n\n"
        "! another comment\n"
        "  broker.id=0\n"
        "version : 0\n"
        "cluster.id P4mWrUMKRvm3AylnZYNBaQ\n"
        "odd\\:key=a\\=b\\:c\\u0041\\tz\n"
        "long=one\\\n    two\n"
        "empty=\n"
    )
    assert read_meta_properties(path) == {
        "broker.id": "0",
        "version": "0",
        "cluster.id": "P4mWrUMKRvm3AylnZYNBaQ",
        "odd:key": "a=b:cA\tz",
        "long": "onetwo",
        "empty": "",
    }


def test_meta_properties_escapes_round_trip(tmp_path):
    path = tmp_path / "meta.properties"
    props = {"a key:=": " leading space, # and ! and \\ and \n", "plain": "x"}
    write_meta_properties(path, props)
    assert read_meta_properties(path) == props


def test_meta_properties_bad_unicode_escape(tmp_path):
    path = tmp_path / "meta.properties"
    path.write_text("version=\\u00\n")
    with pytest.raises(CorruptCheckpointError, match=re.escape(str(path))):
        read_meta_properties(path)


# -- .kafka_cleanshutdown -------------------------------------------------------------------------


def test_clean_shutdown_marker_with_broker_epoch(tmp_path):
    assert not has_clean_shutdown_marker(tmp_path)
    assert read_clean_shutdown_broker_epoch(tmp_path) is None
    write_clean_shutdown_marker(tmp_path, 12)
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).read_bytes() == b'{"version":0,"brokerEpoch":12}'
    assert has_clean_shutdown_marker(tmp_path)
    assert read_clean_shutdown_broker_epoch(tmp_path) == 12
    remove_clean_shutdown_marker(tmp_path)
    assert not has_clean_shutdown_marker(tmp_path)
    remove_clean_shutdown_marker(tmp_path)


def test_clean_shutdown_marker_without_broker_epoch(tmp_path):
    write_clean_shutdown_marker(tmp_path, None)
    assert (tmp_path / ".kafka_cleanshutdown").read_bytes() == b""
    assert has_clean_shutdown_marker(tmp_path)
    assert read_clean_shutdown_broker_epoch(tmp_path) is None


@pytest.mark.parametrize("content", [b"{}", b"[]", b"{bad", b'{"version":0,"brokerEpoch":"12"}'])
def test_unreadable_clean_shutdown_marker_has_no_epoch(tmp_path, content):
    (tmp_path / CLEAN_SHUTDOWN_FILE).write_bytes(content)
    assert read_clean_shutdown_broker_epoch(tmp_path) is None
