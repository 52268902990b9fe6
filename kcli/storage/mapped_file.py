"""Read-only shared mappings of files that hold no file descriptor.

Python's ``mmap.mmap`` duplicates the descriptor it is given and keeps the copy open for the
life of the mapping (until Python 3.13's ``trackfd=False``), so every mapped index cost two
descriptors. A mapping stays valid after its file is closed (POSIX ``mmap``), which is what
Kafka relies on when it maps an index and closes the file. ``map_readonly`` calls ``mmap(2)``
itself and returns the pages as a read-only ``memoryview``; the caller may close the file at
once.

The pages are unmapped when the last view of them is gone (the view, and every slice of it,
keeps the owner alive), never while a reader still holds one: dropping a view is the only way
to release a mapping, so a read can never touch unmapped memory.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_mmap = _libc.mmap
_mmap.restype = ctypes.c_void_p
_mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_munmap = _libc.munmap
_munmap.restype = ctypes.c_int
_munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_MAP_FAILED = ctypes.c_void_p(-1).value


class _Mapping:
    """Owns one mapping; unmaps it when garbage (after the last view of its pages)."""

    __slots__ = ("address", "length")

    def __init__(self, address: int, length: int) -> None:
        self.address = address
        self.length = length

    def __del__(self) -> None:
        _munmap(self.address, self.length)


def map_readonly(fd: int, length: int) -> memoryview:
    """The first ``length`` bytes of the file open on ``fd``, mapped shared and read-only."""
    if length <= 0:
        raise ValueError(f"cannot map {length} bytes")
    address = _mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address is None or address == _MAP_FAILED:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    pages = (ctypes.c_char * length).from_address(address)
    pages.owner = _Mapping(address, length)
    return memoryview(pages).cast("B").toreadonly()
