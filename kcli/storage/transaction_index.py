"""The ``.txnindex`` file: aborted transactions of one segment.

Each entry is 34 bytes, big-endian: version int16 (0), producerId int64, firstOffset int64,
lastOffset int64, lastStableOffset int64. The file exists only for segments that hold aborted
transactions.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from kcli.errors import CorruptIndexError

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION

    def encode(self) -> bytes:
        return _ENTRY.pack(self.version, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


def decode_aborted_txns(data: bytes, source: str) -> list[AbortedTxn]:
    """Every entry in a ``.txnindex`` file's bytes; a partial or unknown-version entry is corruption."""
    if len(data) % ENTRY_SIZE:
        raise CorruptIndexError(f"Transaction index file {source} is corrupt, found {len(data)} bytes which is not a multiple of {ENTRY_SIZE}.")
    entries = []
    for version, producer_id, first, last, lso in _ENTRY.iter_unpack(data):
        if version != CURRENT_VERSION:
            raise CorruptIndexError(f"Transaction index file {source} has an entry of unknown version {version}.")
        entries.append(AbortedTxn(producer_id, first, last, lso, version))
    return entries


def read_aborted_txns(path: Path) -> list[AbortedTxn]:
    return decode_aborted_txns(path.read_bytes(), str(path))


def append_aborted_txn(path: Path, txn: AbortedTxn) -> None:
    """Add one entry at the end of a segment's ``.txnindex`` (created on its first entry)."""
    with open(path, "ab") as index:
        index.write(txn.encode())


def truncate_aborted_txns(path: Path, offset: int) -> None:
    """Drop the entries of transactions whose marker is at or past ``offset`` (Kafka's
    ``TransactionIndex.truncateTo``: entries are in marker order, so the file is cut at the first)."""
    if not path.exists():
        return
    entries = read_aborted_txns(path)
    for i, txn in enumerate(entries):
        if txn.last_offset >= offset:
            with open(path, "r+b") as index:
                index.truncate(i * ENTRY_SIZE)
            return
