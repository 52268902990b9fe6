"""A real broker fed bad input: broken frames, unknown APIs and versions, malformed bodies,
illegal names and counts, bad record batches, and a few thousand random and mutated frames.

Each case checks what the broker answers (or that it closes only that connection), and after
every test the broker must still serve a normal client: an ApiVersions call and a produce whose
record is fetched back.
"""

from __future__ import annotations

import collections
import random
import socket
import struct
import time

import pytest

from kcli.errors import ErrorCode
from kcli.storage.records import NewRecord, build_batch, iter_batches
from tests.broker_process import BrokerProcess
from tests.wire_client import ConnectionClosed, WireClient, code, decode_response, encode_request, request_entity

MAX_REQUEST_BYTES = 65536
BROKER_OVERRIDES = {
    "socket.request.max.bytes": str(MAX_REQUEST_BYTES),
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
}
HEALTH_TOPIC = "health-check"
FUZZ_TOPIC = "fuzz-target"
SMALL_BATCH_TOPIC = "small-batches"
SMALL_MAX_MESSAGE_BYTES = 1024
CLOSE_WAIT_SECONDS = 5.0

FUZZ_SEED = 20261121
FUZZ_FRAMES = 5000
FUZZ_SECONDS = 20.0

PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, CREATE_TOPICS, CREATE_PARTITIONS = 0, 1, 2, 3, 18, 19, 37


# -- fixtures and helpers ---------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def topics(broker):
    create_test_topics(broker)


@pytest.fixture(autouse=True)
def still_serving(broker, topics):
    yield
    assert_broker_serves(broker)


@pytest.fixture
def own_broker(tmp_path):
    """A broker of the test's own, for input that may take the broker down: the other tests keep
    theirs."""
    process = BrokerProcess(tmp_path, {"broker.id": "0", **BROKER_OVERRIDES}).start()
    try:
        create_test_topics(process)
        yield process
    finally:
        if process.process.poll() is None:
            process.stop()
        else:
            process.kill()


def create_test_topics(broker) -> None:
    with WireClient("127.0.0.1", broker.port) as setup:
        for name, partitions, configs in (
            (HEALTH_TOPIC, 1, None),
            (FUZZ_TOPIC, 2, None),
            (SMALL_BATCH_TOPIC, 1, {"max.message.bytes": str(SMALL_MAX_MESSAGE_BYTES)}),
        ):
            assert code(setup.create_topic(name, partitions, configs).error_code) == ErrorCode.NONE


def assert_broker_serves(broker) -> None:
    assert broker.process.poll() is None, "the broker process exited:\n" + "\n".join(broker.log_lines[-40:])
    with WireClient("127.0.0.1", broker.port) as client:
        versions = client.call(API_VERSIONS, 3, {"client_software_name": "kcli-tests", "client_software_version": "1"})
        assert code(versions.error_code) == ErrorCode.NONE
        value = f"alive-{time.monotonic_ns()}".encode()
        answer = client.produce(HEALTH_TOPIC, 0, batch([value]))
        assert code(answer.error_code) == ErrorCode.NONE, answer
        assert values_at(client, HEALTH_TOPIC, 0, answer.base_offset)[answer.base_offset] == value


def batch(values: list[bytes], **fields) -> bytes:
    now = int(time.time() * 1000)
    return build_batch([NewRecord(None, value, now) for value in values], **fields)


def values_at(client: WireClient, topic: str, partition: int, offset: int) -> dict[int, bytes | None]:
    data = client.fetch(topic, partition, offset)
    assert code(data.error_code) == ErrorCode.NONE, data
    return {record.offset: record.value for b in iter_batches(data.records or b"") for record in b.records()}


def raw_connection(broker) -> WireClient:
    return WireClient("127.0.0.1", broker.port, timeout=CLOSE_WAIT_SECONDS)


def header(api_key: int, version: int, correlation_id: int = 1, client_id: bytes = b"bad-input") -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def request_frame(api_key: int, version: int, fields: dict, correlation_id: int = 1) -> bytes:
    return encode_request(request_entity(api_key, version, fields), correlation_id)


def assert_closed_without_answer(broker, data: bytes) -> None:
    with raw_connection(broker) as connection:
        connection.send_raw(data)
        assert connection.wait_closed(), f"the broker kept the connection open after {data[:40]!r}"


def create_topics(client: WireClient, topics: list[tuple[str, int, int]]) -> list[tuple[int, str | None]]:
    response = client.call(
        CREATE_TOPICS,
        7,
        {"topics": [{"name": n, "num_partitions": p, "replication_factor": r} for n, p, r in topics], "timeout": 5000},
    )
    return [(code(t.error_code), t.error_message) for t in response.topics]


# -- frames -----------------------------------------------------------------------------------------


def test_garbage_frames_close_only_their_connection(broker):
    rng = random.Random(7)
    with WireClient("127.0.0.1", broker.port) as bystander:
        for size in (1, 7, 9, 64, 1000):
            assert_closed_without_answer(broker, frame(bytes(rng.randrange(256) for _ in range(size))))
        assert_closed_without_answer(broker, frame(b""))
        assert code(bystander.call(API_VERSIONS, 0, {}).error_code) == ErrorCode.NONE


def test_truncated_frames_leave_the_broker_serving(broker):
    whole = request_frame(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
    for cut in (2, 4, 6, len(whole) // 2, len(whole) - 1):
        with raw_connection(broker) as connection:
            connection.send_raw(whole[:cut])
            connection.sock.shutdown(socket.SHUT_WR)
            assert connection.wait_closed()


def test_a_size_over_socket_request_max_bytes_closes_the_connection(broker):
    with raw_connection(broker) as connection:
        connection.send_raw(struct.pack(">i", MAX_REQUEST_BYTES + 1))
        assert connection.wait_closed()
    with raw_connection(broker) as connection:
        connection.send_raw(struct.pack(">i", 2**31 - 1) + b"\0" * 100)
        assert connection.wait_closed()


def test_a_negative_size_closes_the_connection(broker):
    for size in (-1, -(2**31)):
        assert_closed_without_answer(broker, struct.pack(">i", size) + b"\0" * 16)


def test_unknown_api_keys_close_the_connection(broker):
    # Fetch (1) v0 as well: a known key at a version kcli does not serve (OffsetFetch v0, once in
    # this list, is served since the ZooKeeper-era versions are stated).
    for api_key in (999, 1, -1, 32767):
        assert_closed_without_answer(broker, frame(header(api_key, 0) + b"\0" * 8))


def test_an_unsupported_version_closes_the_connection(broker):
    assert_closed_without_answer(broker, frame(header(METADATA, 99) + b"\0" * 8))
    assert_closed_without_answer(broker, frame(header(PRODUCE, 2) + b"\0" * 8))


def test_api_versions_of_an_unknown_version_is_answered_in_v0(broker):
    with raw_connection(broker) as connection:
        connection.send_raw(frame(header(API_VERSIONS, 99, correlation_id=4242) + b"\x07future\x00"))
        correlation_id, response = decode_response(API_VERSIONS, 0, connection.read_frame())
        assert correlation_id == 4242
        assert code(response.error_code) == ErrorCode.UNSUPPORTED_VERSION
        ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert ranges[API_VERSIONS] == (0, 4)
        assert ranges[32] == (1, 4) and ranges[21] == (0, 2) and ranges[61] == (0, 0)
        assert code(connection.call(API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"}).error_code) == 0


def test_malformed_request_bodies_close_the_connection(own_broker):
    describe = request_frame(32, 4, {"resources": [{"resource_type": 2, "resource_name": HEALTH_TOPIC, "configuration_keys": None}]})
    cases = {
        "an array longer than the frame": frame(header(METADATA, 1) + struct.pack(">i", 1_000_000)),
        "a string running past the end": frame(header(METADATA, 1) + struct.pack(">ih", 1, 500) + b"abc"),
        "a flexible body cut short": frame(describe[4:-3]),
        "a produce ending inside its fields": frame(header(PRODUCE, 9) + b"\0" + b"\x00" + b"\xff"),
        # Kafka reads a compact array length as an int32 and refuses this one (2**32 entries).
        "a compact array length past int32": frame(header(CREATE_TOPICS, 7) + b"\0" + b"\x81\x80\x80\x80\x10"),
    }
    for label, data in cases.items():
        assert_closed_without_answer(own_broker, data)
        time.sleep(0.1)
        assert own_broker.process.poll() is None, f"{label}: the broker process died:\n" + "\n".join(_crash_lines(own_broker))
        assert_broker_serves(own_broker)


def test_requests_after_a_malformed_one_are_not_served(broker, client):
    before = client.produce(HEALTH_TOPIC, 0, batch([b"before"]))
    assert code(before.error_code) == ErrorCode.NONE
    malformed = frame(header(METADATA, 1) + struct.pack(">i", 1_000_000))
    produce = request_frame(PRODUCE, 9, {"acks": 1, "timeout": 5000, "topic_data": [
        {"name": HEALTH_TOPIC, "partition_data": [{"index": 0, "records": batch([b"after a malformed request"])}]}]}, correlation_id=2)
    with raw_connection(broker) as connection:
        connection.send_raw(malformed + produce)  # one write: the broker reads both at once
        assert connection.wait_closed()
    assert set(values_at(client, HEALTH_TOPIC, 0, before.base_offset)) == {before.base_offset}


def _crash_lines(broker) -> list[str]:
    """The lines a dying process wrote outside the logging format (a native abort, a panic)."""
    return [line for line in broker.log_lines if not line.startswith(("[", " "))][:5]


# -- names and counts -------------------------------------------------------------------------------


def test_illegal_topic_names_are_refused_by_create_topics_and_metadata(client):
    names = ["", ".", "..", "has space", "x" * 250, "caf\u00e9", "a/b"]
    answers = create_topics(client, [(name, 1, 1) for name in names])
    for name, (error, message) in zip(names, answers, strict=True):
        assert error == ErrorCode.INVALID_TOPIC_EXCEPTION, (name, error, message)
        assert message and message.startswith("Topic name is invalid: "), message
    response = client.call(METADATA, 12, {"topics": [{"name": "has space"}, {"name": "missing-topic"}], "allow_auto_topic_creation": True})
    assert [(t.name, code(t.error_code)) for t in response.topics] == [
        ("has space", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("missing-topic", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]


def test_non_positive_counts_are_refused(client):
    answers = create_topics(client, [("neg-partitions", -5, 1), ("zero-partitions", 0, 1), ("neg-replicas", 1, -3), ("zero-replicas", 1, 0), ("too-many-replicas", 1, 2)])
    assert [error for error, _ in answers] == [
        ErrorCode.INVALID_PARTITIONS,
        ErrorCode.INVALID_PARTITIONS,
        ErrorCode.INVALID_REPLICATION_FACTOR,
        ErrorCode.INVALID_REPLICATION_FACTOR,
        ErrorCode.INVALID_REPLICATION_FACTOR,
    ]
    assert all(message for _, message in answers)
    metadata = client.call(METADATA, 12, {"topics": [{"name": n} for n in ("neg-partitions", "zero-partitions")], "allow_auto_topic_creation": False})
    assert {code(t.error_code) for t in metadata.topics} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    grow = client.call(CREATE_PARTITIONS, 3, {"topics": [{"name": HEALTH_TOPIC, "count": -1, "assignments": None}], "timeout": 5000, "validate_only": False})
    assert code(grow.results[0].error_code) == ErrorCode.INVALID_PARTITIONS


# -- record batches ---------------------------------------------------------------------------------


def test_produce_to_a_missing_partition_or_topic(client):
    assert code(client.produce(HEALTH_TOPIC, 7, batch([b"v"])).error_code) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert code(client.produce(HEALTH_TOPIC, -1, batch([b"v"])).error_code) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert code(client.produce("no-such-topic-q", 0, batch([b"v"])).error_code) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_an_oversized_batch_is_refused_with_message_too_large(client):
    _, end = client.list_offset(SMALL_BATCH_TOPIC, 0, -1)
    refused = client.produce(SMALL_BATCH_TOPIC, 0, batch([b"x" * (2 * SMALL_MAX_MESSAGE_BYTES)]))
    assert code(refused.error_code) == ErrorCode.MESSAGE_TOO_LARGE
    assert client.list_offset(SMALL_BATCH_TOPIC, 0, -1) == (0, end)
    assert code(client.produce(SMALL_BATCH_TOPIC, 0, batch([b"small"])).error_code) == ErrorCode.NONE


def test_a_corrupt_crc_is_refused_with_corrupt_message(client):
    _, end = client.list_offset(HEALTH_TOPIC, 0, -1)
    data = bytearray(batch([b"payload-one", b"payload-two"]))
    data[-1] ^= 0xFF  # a record byte: covered by the CRC
    refused = client.produce(HEALTH_TOPIC, 0, bytes(data))
    assert code(refused.error_code) == ErrorCode.CORRUPT_MESSAGE
    assert client.list_offset(HEALTH_TOPIC, 0, -1) == (0, end)


def test_a_truncated_batch_is_refused_with_invalid_record(client):
    # Kafka 3.9 finds no complete batch in the bytes and refuses the request as INVALID_RECORD.
    data = batch([b"a" * 100])
    refused = client.produce(HEALTH_TOPIC, 0, data[:-10])
    assert code(refused.error_code) == ErrorCode.INVALID_RECORD


# -- fuzzing ----------------------------------------------------------------------------------------


def _base_frames() -> list[bytes]:
    records = batch([b"fuzz-a", b"fuzz-b"])
    produce = {"acks": 1, "timeout": 1000, "topic_data": [{"name": FUZZ_TOPIC, "partition_data": [{"index": 1, "records": records}]}]}
    fetch = {
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 4096,
        "topics": [{"topic": FUZZ_TOPIC, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 4096}]}],
    }
    metadata = {"topics": [{"name": FUZZ_TOPIC}], "allow_auto_topic_creation": False}
    return [
        request_frame(PRODUCE, 3, produce),
        request_frame(PRODUCE, 9, produce),
        request_frame(FETCH, 4, fetch),
        request_frame(FETCH, 12, fetch),
        request_frame(METADATA, 1, metadata),
        request_frame(METADATA, 12, metadata),
        request_frame(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": FUZZ_TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}]}),
        request_frame(API_VERSIONS, 3, {"client_software_name": "fuzz", "client_software_version": "1"}),
        # read-only admin requests: a mutation cannot delete or reconfigure the data checked afterwards
        request_frame(32, 4, {"resources": [{"resource_type": 2, "resource_name": FUZZ_TOPIC, "configuration_keys": None}], "include_synonyms": True}),
        request_frame(35, 4, {"topics": [{"topic": FUZZ_TOPIC, "partitions": [0, 1]}]}),
        request_frame(61, 0, {"topics": [{"name": FUZZ_TOPIC, "partition_indexes": [0, 1]}]}),
    ]


def _mutate(rng: random.Random, base: bytes) -> bytes:
    kind = rng.randrange(8)
    data = bytearray(base)
    if kind == 0:  # flip a few bytes of the body, size prefix kept
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(4, len(data))] = rng.randrange(256)
        return bytes(data)
    if kind == 1:  # flip bytes in the header
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(4, min(len(data), 16))] = rng.randrange(256)
        return bytes(data)
    if kind == 2:  # truncate the body, size prefix adjusted
        body = data[4 : rng.randrange(5, len(data))]
        return frame(bytes(body))
    if kind == 3:  # truncate without adjusting the size (the broker waits for bytes that never come)
        return bytes(data[: rng.randrange(1, len(data))])
    if kind == 4:  # extend the body with random bytes, size adjusted
        return frame(bytes(data[4:]) + rng.randbytes(rng.randint(1, 64)))
    if kind == 5:  # a random size prefix before the real body
        size = rng.choice([0, 1, -1, rng.randrange(-(2**31), 2**31), rng.randrange(MAX_REQUEST_BYTES - 8, MAX_REQUEST_BYTES + 8)])
        return struct.pack(">i", size) + bytes(data[4:])
    if kind == 6:  # entirely random bytes
        return rng.randbytes(rng.randint(1, 200))
    return bytes(data)  # unchanged: valid requests mixed in


def _fuzz_connection(port: int, frames: list[bytes], rng: random.Random) -> None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            for data in frames:
                sock.sendall(data)
            if rng.random() < 0.3:
                sock.settimeout(0.05)
                try:
                    while sock.recv(65536):
                        pass
                except OSError:
                    pass
    except OSError:
        pass  # the broker is allowed to drop these connections at any point


def test_fuzzed_frames_leave_the_broker_serving_and_data_intact(own_broker, capsys):
    broker = own_broker
    with capsys.disabled():
        print(f"\nfuzz seed {FUZZ_SEED}")
    rng = random.Random(FUZZ_SEED)
    acknowledged: dict[tuple[int, int], bytes] = {}
    client = WireClient("127.0.0.1", broker.port)
    for i in range(20):
        partition = i % 2
        value = f"before-fuzz-{i}".encode()
        answer = client.produce(FUZZ_TOPIC, partition, batch([value]))
        assert code(answer.error_code) == ErrorCode.NONE, answer
        acknowledged[(partition, answer.base_offset)] = value
    bases = _base_frames()
    unanswered = _unanswered(broker, bases)
    log_mark = len(broker.log_lines)
    sent = 0
    deadline = time.monotonic() + FUZZ_SECONDS
    while sent < FUZZ_FRAMES and time.monotonic() < deadline:
        frames = [_mutate(rng, rng.choice(bases)) for _ in range(rng.randint(1, 6))]
        _fuzz_connection(broker.port, frames, rng)
        sent += len(frames)
    client.close()
    assert sent >= 1000, f"only {sent} frames sent within {FUZZ_SECONDS} s"
    assert broker.process.poll() is None, f"the broker died while fuzzed (seed {FUZZ_SEED}):\n" + "\n".join(broker.log_lines[-30:])
    client = WireClient("127.0.0.1", broker.port)
    failures = collections.Counter(line for line in broker.log_lines[log_mark:] if not line.startswith(("[", " ", "Traceback")))
    with capsys.disabled():
        print(f"fuzz sent {sent} frames; handler failures that closed a connection: {sum(failures.values())}")
        for line, count in failures.most_common(10):
            print(f"  {count} x {line}")
    for partition in (0, 1):
        found = values_at(client, FUZZ_TOPIC, partition, 0)
        for (p, offset), value in acknowledged.items():
            if p == partition:
                assert found.get(offset) == value, f"record {partition}:{offset} lost or changed after fuzzing"
    answer = client.produce(FUZZ_TOPIC, 0, batch([b"after-fuzz"]))
    assert code(answer.error_code) == ErrorCode.NONE
    assert values_at(client, FUZZ_TOPIC, 0, answer.base_offset)[answer.base_offset] == b"after-fuzz"
    client.close()
    assert not unanswered, "valid requests among the frames to mutate were not answered:\n" + "\n".join(unanswered)


def _unanswered(broker, frames: list[bytes]) -> list[str]:
    """The frames (valid requests) the broker does not answer, each with the log lines it caused."""
    failures = []
    for data in frames:
        api_key, version = struct.unpack_from(">hh", data, 4)
        mark = len(broker.log_lines)
        with raw_connection(broker) as connection:
            connection.send_raw(data)
            try:
                decode_response(api_key, version, connection.read_frame())
            except (ConnectionClosed, OSError) as e:
                time.sleep(0.1)
                failures.append(f"API {api_key} v{version} ({e}): " + " | ".join(broker.log_lines[mark:][-3:]))
    return failures
