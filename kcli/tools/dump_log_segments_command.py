"""The work behind ``kcli dump-log-segments``: reading each kind of file and printing Kafka's lines.

Plain output restates Apache Kafka 3.9's DumpLogSegments templates; problems found along the way
(index entries that do not match the log, time-index disorder, offset gaps) are kept and printed
on stderr after every file, as Kafka does, most recent first.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kcli.errors import CorruptCheckpointError, CorruptRecordError, KcliError, UsageError
from kcli.output import Output
from kcli.storage.file_records import FileRecords
from kcli.storage.index import OffsetIndex, TimeIndex
from kcli.storage.producer_state import format_snapshot_entry, read_producer_snapshot
from kcli.storage.records import ControlType, LegacyBatch, RecordBatch, TimestampType, increment_sequence, parse_control_record
from kcli.storage.transaction_index import read_aborted_txns
from kcli.storage.truncated import is_kept_aside_dir

# (key, value, offset) -> the (key, payload) strings to print, Kafka's MessageParser.
RecordParser = Callable[[bytes | None, bytes | None, int], tuple[str | None, str | None]]

_DECODER_ALIASES = {
    "kafka.serializer.StringDecoder": "org.apache.kafka.tools.api.StringDecoder",
    "kafka.serializer.IntegerDecoder": "org.apache.kafka.tools.api.IntegerDecoder",
    "kafka.serializer.LongDecoder": "org.apache.kafka.tools.api.LongDecoder",
}


def _string_decoder(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _integer_decoder(data: bytes) -> str:
    if len(data) != 4:
        raise CorruptRecordError(f"IntegerDecoder needs 4 bytes, got {len(data)}")
    return str(struct.unpack(">i", data)[0])


def _long_decoder(data: bytes) -> str:
    if len(data) != 8:
        raise CorruptRecordError(f"LongDecoder needs 8 bytes, got {len(data)}")
    return str(struct.unpack(">q", data)[0])


_DECODERS: dict[str, Callable[[bytes], str]] = {
    "org.apache.kafka.tools.api.StringDecoder": _string_decoder,
    "org.apache.kafka.tools.api.IntegerDecoder": _integer_decoder,
    "org.apache.kafka.tools.api.LongDecoder": _long_decoder,
}


def _decoder(out: Output, class_name: str | None) -> Callable[[bytes], str]:
    if class_name is None or class_name == "":
        return _string_decoder
    if class_name in _DECODER_ALIASES:
        new_name = _DECODER_ALIASES[class_name]
        out.line(f"{class_name} is deprecated. Please use {new_name} instead")
        class_name = new_name
    try:
        return _DECODERS[class_name]
    except KeyError:
        known = ", ".join(sorted(_DECODERS))
        raise UsageError(f"unknown decoder class {class_name}; kcli provides {known}") from None


def record_parser(
    out: Output, key_decoder: str | None, value_decoder: str | None, offsets: bool, transaction_log: bool,
    cluster_metadata: bool = False, remote_log_metadata: bool = False,
) -> RecordParser:
    """The function that turns a record into its printed (key, payload), Kafka's MessageParser."""
    if offsets:
        from kcli.protocol.coordinator_records import format_offsets_record

        return format_offsets_record
    if transaction_log:
        from kcli.protocol.coordinator_records import format_transaction_log_record

        return format_transaction_log_record
    if cluster_metadata:
        from kcli.protocol.metadata_records import format_cluster_metadata_record

        return format_cluster_metadata_record
    if remote_log_metadata:
        from kcli.protocol.remote_log_metadata_records import format_remote_log_metadata_record

        return format_remote_log_metadata_record
    decode_key = _decoder(out, key_decoder)
    decode_value = _decoder(out, value_decoder)

    def parse(key: bytes | None, value: bytes | None, offset: int) -> tuple[str | None, str | None]:
        return (
            None if key is None else decode_key(key),
            None if value is None else decode_value(value),
        )

    parse.is_string_decoding = decode_key is _string_decoder and decode_value is _string_decoder  # type: ignore[attr-defined]
    return parse


@dataclass(frozen=True)
class DumpOptions:
    print_data: bool = False
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = 5 * 1024 * 1024
    max_bytes: int = 2**31 - 1
    skip_record_metadata: bool = False


class Dumper:
    """Dumps files in order, keeping Kafka's end-of-run problem reports."""

    def __init__(self, out: Output, options: DumpOptions, parser: RecordParser) -> None:
        self.out = out
        self.options = options
        self.parser = parser
        self.deep = options.deep_iteration or options.print_data
        self.index_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_out_of_order: dict[str, list[tuple[int, int]]] = {}
        self.time_offsets_not_found: dict[str, list[tuple[int, int]]] = {}
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}
        self.failed = False

    # -- driver -------------------------------------------------------------------------------

    def dump_files(self, paths: list[str]) -> bool:
        """Dump every file; returns False when a file could not be dumped. A directory of batches
        a truncation kept aside (``truncated-<epoch>-<offset>``, ``storage/truncated.py``) stands
        for its ``.log`` files, in offset order."""
        for name in _expand_kept_aside(paths):
            path = Path(name)
            if self.out.json:
                self.out.obj({"type": "file", "path": name})
            else:
                self.out.line(f"Dumping {name}")
            try:
                self._dump_one(path, name)
            except (KcliError, OSError) as exc:
                self.failed = True
                self.out.diag(f"Error: {_describe(exc, name)}")
        self._report_problems()
        return not self.failed

    def _dump_one(self, path: Path, name: str) -> None:
        if path.is_dir():
            raise KcliError(f"{name} is a directory, not a log, index or snapshot file")
        suffix = path.suffix
        if suffix == ".log":
            self.dump_log(path, name)
        elif suffix == ".index":
            self.dump_index(path, name)
        elif suffix == ".timeindex":
            self.dump_time_index(path, name)
        elif suffix == ".snapshot":
            self.dump_producer_snapshot(path)
        elif suffix == ".txnindex":
            self.dump_txn_index(path)
        else:
            self.out.diag(f"Ignoring unknown file {name}")

    def _report_problems(self) -> None:
        diag = self.out.diag
        for file, pairs in self.index_mismatches.items():
            diag(f"Mismatches in :{file}")
            for index_offset, log_offset in reversed(pairs):
                diag(f"  Index offset: {index_offset}, log offset: {log_offset}")
        for file, pairs in self.time_mismatches.items():
            diag(f"Found timestamp mismatch in :{file}")
            for index_ts, log_ts in reversed(pairs):
                diag(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}")
        for file, pairs in self.time_out_of_order.items():
            diag(f"Found out of order timestamp in :{file}")
            for index_ts, previous in reversed(pairs):
                diag(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {previous}")
        for pairs in self.time_offsets_not_found.values():
            diag("The following indexed offsets are not found in the log.")
            for indexed, found in reversed(pairs):
                diag(f"Indexed offset: {indexed}, found log offset: {found}")
        for file, pairs in self.non_consecutive.items():
            diag(f"Non-consecutive offsets in {file}")
            for first, second in reversed(pairs):
                diag(f"  {first} is followed by {second}")

    # -- .log -----------------------------------------------------------------------------------

    def dump_log(self, path: Path, name: str) -> None:
        base_offset = _base_offset(path)
        out = self.out
        options = self.options
        with FileRecords.open(path) as records:
            if out.json:
                out.obj({"type": "log", "logStartOffset": base_offset})
            else:
                out.line(f"Log starting offset: {base_offset}")
            end = min(records.size, options.max_bytes)
            valid_bytes = 0
            last_offset = -1
            gaps: list[tuple[int, int]] = []
            with out.progress(path.name, end) as progress:
                next_progress = 0
                try:
                    for position, batch in records.batches(0, end):
                        self._print_batch(batch, position)
                        if self.deep:
                            last_offset = self._print_records(batch, position, last_offset, gaps)
                        valid_bytes = position + batch.size_in_bytes
                        if valid_bytes >= next_progress:
                            progress(valid_bytes)
                            next_progress = valid_bytes + (1 << 24)
                except CorruptRecordError as exc:
                    self.failed = True
                    out.diag(f"Error: {name}: {exc}")
            if gaps:
                self.non_consecutive[str(path.absolute())] = gaps
            trailing = records.size - valid_bytes
            if trailing > 0 and options.max_bytes == 2**31 - 1:
                if out.json:
                    out.obj({"type": "invalidBytes", "count": trailing, "position": valid_bytes})
                else:
                    out.line(f"Found {trailing} invalid bytes at the end of {path.name}")

    def _print_batch(self, batch: RecordBatch | LegacyBatch, position: int) -> None:
        out = self.out
        if out.json:
            out.obj(_batch_json(batch, position))
            return
        tail = (
            f" position: {position} {batch.timestamp_type.label}: {batch.max_timestamp} size: {batch.size_in_bytes}"
            f" magic: {batch.magic} compresscodec: {batch.compression.label} crc: {batch.crc} isvalid: {_bool(batch.is_valid())}"
        )
        if batch.magic >= 2:
            horizon = batch.delete_horizon_ms
            out.line(
                f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.record_count}"
                f" baseSequence: {batch.base_sequence} lastSequence: {batch.last_sequence}"
                f" producerId: {batch.producer_id} producerEpoch: {batch.producer_epoch}"
                f" partitionLeaderEpoch: {batch.partition_leader_epoch} isTransactional: {_bool(batch.is_transactional)}"
                f" isControl: {_bool(batch.is_control)}"
                f" deleteHorizonMs: {'OptionalLong.empty' if horizon is None else f'OptionalLong[{horizon}]'}" + tail
            )
        else:
            out.line(f"offset: {batch.last_offset}" + tail)

    def _print_records(self, batch: RecordBatch | LegacyBatch, position: int, last_offset: int, gaps: list[tuple[int, int]]) -> int:
        try:
            records = _record_rows(batch)
        except CorruptRecordError as exc:
            self.failed = True
            self.out.diag(f"Error: cannot read the records of the batch at position {position}: {exc}")
            return last_offset
        if self.out.json:
            return self._print_records_json(batch, records, last_offset, gaps)
        texts: list[str] = []
        line = texts.append
        label = batch.timestamp_type.label
        control = batch.is_control
        print_data = self.options.print_data and not control
        skip_metadata = self.options.skip_record_metadata
        parse = self.parser
        plain_strings = getattr(parse, "is_string_decoding", False)
        v2 = batch.magic >= 2
        # The loop below runs once per record of a multi-GB segment: it formats from plain
        # tuples and decodes UTF-8 inline for the default decoder.
        for offset, timestamp, key, value, headers, sequence, crc, valid in records:
            if last_offset != -1 and offset != last_offset + 1:
                gaps.append((last_offset, offset))
            last_offset = offset
            if skip_metadata:
                text = ""
                prefix = "| "
            else:
                if v2:
                    text = (
                        f"| offset: {offset} {label}: {timestamp} keySize: {-1 if key is None else len(key)}"
                        f" valueSize: {-1 if value is None else len(value)} sequence: {sequence}"
                        f" headerKeys: [{','.join([h[0] for h in headers]) if headers else ''}]"
                    )
                else:
                    text = (
                        f"| offset: {offset} {label}: {timestamp} keySize: {-1 if key is None else len(key)}"
                        f" valueSize: {-1 if value is None else len(value)} isValid: {_bool(valid)} crc: {crc}}}"
                    )
                if control:
                    text += _control_text(key, value, offset)
                prefix = " "
            if print_data:
                if plain_strings:
                    printed_key = None if key is None else key.decode("utf-8", "replace")
                    payload = None if value is None else value.decode("utf-8", "replace")
                else:
                    printed_key, payload = parse(key, value, offset)
                if printed_key is not None:
                    text += f"{prefix}key: {printed_key}"
                if payload is not None:
                    text += f" payload: {payload}"
            line(text)
        self.out.lines(texts)
        return last_offset

    def _print_records_json(self, batch, records, last_offset: int, gaps: list[tuple[int, int]]) -> int:
        print_data = self.options.print_data and not batch.is_control
        label = batch.timestamp_type.label
        for offset, timestamp, key, value, headers, sequence, crc, valid in records:
            if last_offset != -1 and offset != last_offset + 1:
                gaps.append((last_offset, offset))
            last_offset = offset
            obj: dict = {"type": "record", "offset": offset, "timestampType": label, "timestamp": timestamp,
                         "keySize": -1 if key is None else len(key), "valueSize": -1 if value is None else len(value)}
            if batch.magic >= 2:
                obj["sequence"] = sequence
                obj["headers"] = [{"key": k, "value": None if v is None else v.decode("utf-8", "replace")} for k, v in headers]
            else:
                obj["isValid"] = valid
                obj["crc"] = crc
            if batch.is_control:
                control_type, epoch = parse_control_record(key, value, offset)
                obj["controlType"] = control_type.name
                if epoch is not None:
                    obj["coordinatorEpoch"] = epoch
            if print_data:
                obj["key"], obj["payload"] = self.parser(key, value, offset)
            self.out.obj(obj)
        return last_offset

    # -- .index and .timeindex ------------------------------------------------------------------

    def _first_batch_at(self, records: FileRecords, position: int, max_size: int):
        for _, batch in records.batches(position, min(records.size, position + max_size)):
            return batch
        return None

    def dump_index(self, path: Path, name: str) -> None:
        base_offset = _base_offset(path)
        log_path = path.with_suffix(".log")
        index = OffsetIndex.open_readonly(path, base_offset)
        try:
            if index.entries == 0:
                self._index_line(f"{name} is empty.", {"type": "indexEmpty"})
                return
            if self.options.index_sanity_check:
                index.sanity_check()
                self._index_line(f"{name} passed sanity check.", {"type": "sanityCheck", "passed": True})
                return
            with FileRecords.open(log_path) as records:
                mismatches: list[tuple[int, int]] = []
                for i in range(index.entries):
                    offset, position = index.entry(i)
                    if offset == base_offset and i > 0:
                        break
                    batch = self._first_batch_at(records, position, self.options.max_message_size)
                    found = -1 if batch is None else batch.last_offset
                    if found != offset:
                        mismatches.append((offset, found))
                    if not self.options.verify_index_only:
                        self._index_line(f"offset: {offset} position: {position}", {"type": "indexEntry", "offset": offset, "position": position})
                if mismatches:
                    self.index_mismatches[str(path.absolute())] = mismatches
        finally:
            index.close()

    def dump_time_index(self, path: Path, name: str) -> None:
        base_offset = _base_offset(path)
        time_index = TimeIndex.open_readonly(path, base_offset)
        try:
            if self.options.index_sanity_check:
                time_index.sanity_check()
                self._index_line(f"{name} passed sanity check.", {"type": "sanityCheck", "passed": True})
                return
            if time_index.entries == 0:
                return
            # Without its .index the time index can still be checked, scanning the log from 0.
            index_path = path.with_suffix(".index")
            offset_index = OffsetIndex.open_readonly(index_path, base_offset) if index_path.exists() else None
            key = str(path.absolute())
            try:
                with FileRecords.open(path.with_suffix(".log")) as records:
                    previous = -1
                    for i in range(time_index.entries):
                        timestamp, offset = time_index.entry(i)
                        if offset == base_offset and i > 0:
                            break
                        position = 0 if offset_index is None else offset_index.lookup(offset)[1]
                        batch = None
                        for _, candidate in records.batches(position, records.size):
                            if candidate.last_offset >= offset:
                                batch = candidate
                                break
                        if batch is None:
                            self.time_offsets_not_found.setdefault(key, []).append((offset, -1))
                        elif batch.last_offset != offset:
                            self.time_offsets_not_found.setdefault(key, []).append((offset, batch.last_offset))
                        else:
                            max_ts = max((row[1] for row in _record_rows(batch)), default=-1)
                            if max_ts != timestamp:
                                self.time_mismatches.setdefault(key, []).append((timestamp, max_ts))
                            if previous >= timestamp:
                                self.time_out_of_order.setdefault(key, []).append((timestamp, previous))
                        if not self.options.verify_index_only:
                            self._index_line(f"timestamp: {timestamp} offset: {offset}", {"type": "timeIndexEntry", "timestamp": timestamp, "offset": offset})
                        previous = timestamp
            finally:
                if offset_index is not None:
                    offset_index.close()
        finally:
            time_index.close()

    def _index_line(self, text: str, obj: dict) -> None:
        if self.out.json:
            self.out.obj(obj)
        else:
            self.out.line(text)

    # -- .snapshot and .txnindex ----------------------------------------------------------------

    def dump_producer_snapshot(self, path: Path) -> None:
        try:
            entries = read_producer_snapshot(path)
        except CorruptCheckpointError as exc:
            # Kafka prints the snapshot's problem and carries on with the next file.
            self.failed = True
            self.out.diag(str(exc))
            return
        for entry in entries:
            if self.out.json:
                self.out.obj({"type": "producerSnapshotEntry", **{k: getattr(entry, k) for k in entry.__dataclass_fields__}})
            else:
                self.out.line(format_snapshot_entry(entry))

    def dump_txn_index(self, path: Path) -> None:
        for txn in read_aborted_txns(path):
            if self.out.json:
                self.out.obj({"type": "abortedTxn", **txn._asdict()})
            else:
                self.out.line(
                    f"version: {txn.version} producerId: {txn.producer_id} firstOffset: {txn.first_offset} "
                    f"lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}"
                )


def _expand_kept_aside(paths: list[str]) -> list[str]:
    expanded: list[str] = []
    for name in paths:
        path = Path(name)
        if is_kept_aside_dir(path):
            expanded.extend(str(path / child.name) for child in sorted(path.iterdir(), key=lambda p: p.name) if child.name.endswith(".log"))
        else:
            expanded.append(name)
    return expanded


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _base_offset(path: Path) -> int:
    stem = path.name.split(".", 1)[0]
    try:
        return int(stem)
    except ValueError:
        raise KcliError(f"{path}: file name does not start with a base offset (expected a name like 00000000000000000000{path.suffix})") from None


def _record_rows(batch: RecordBatch | LegacyBatch) -> list[tuple]:
    """Each record as ``(offset, timestamp, key, value, headers, sequence, crc, valid)``."""
    if batch.magic < 2:
        return batch.records()
    base_offset, base_timestamp, base_sequence = batch.base_offset, batch.base_timestamp, batch.base_sequence
    log_append_time = batch.max_timestamp if batch.timestamp_type is TimestampType.LOG_APPEND_TIME else None
    return [
        (
            base_offset + od,
            base_timestamp + tsd if log_append_time is None else log_append_time,
            key,
            value,
            headers,
            -1 if base_sequence == -1 else increment_sequence(base_sequence, od),
            None,
            True,
        )
        for od, tsd, key, value, headers in batch.record_fields()
    ]


def _control_text(key: bytes | None, value: bytes | None, offset: int) -> str:
    try:
        control_type, epoch = parse_control_record(key, value, offset)
    except CorruptRecordError as exc:
        return f" controlType: invalid ({exc})"
    if epoch is not None:
        return f" endTxnMarker: {control_type.name} coordinatorEpoch: {epoch}"
    raw = struct.unpack_from(">h", key, 2)[0]
    return f" controlType: {control_type.name if control_type is not ControlType.UNKNOWN else 'UNKNOWN'}({raw})"


def _batch_json(batch: RecordBatch | LegacyBatch, position: int) -> dict:
    obj = {"type": "batch"}
    if batch.magic >= 2:
        obj.update(
            baseOffset=batch.base_offset, lastOffset=batch.last_offset, count=batch.record_count,
            baseSequence=batch.base_sequence, lastSequence=batch.last_sequence, producerId=batch.producer_id,
            producerEpoch=batch.producer_epoch, partitionLeaderEpoch=batch.partition_leader_epoch,
            isTransactional=batch.is_transactional, isControl=batch.is_control, deleteHorizonMs=batch.delete_horizon_ms,
        )
    else:
        obj["offset"] = batch.last_offset
    obj.update(
        position=position, timestampType=batch.timestamp_type.label, maxTimestamp=batch.max_timestamp,
        size=batch.size_in_bytes, magic=batch.magic, compressCodec=batch.compression.label, crc=batch.crc,
        isValid=batch.is_valid(),
    )
    return obj


def _describe(exc: BaseException, name: str) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"{exc.filename or name}: no such file"
    if isinstance(exc, IsADirectoryError):
        return f"{exc.filename or name}: is a directory"
    if isinstance(exc, PermissionError):
        return f"{exc.filename or name}: permission denied"
    if isinstance(exc, OSError):
        return f"{exc.filename or name}: {exc.strerror or exc}"
    return str(exc)
