"""kcli's exception types.

Every error a user can cause (bad argument, missing or corrupt file) is a ``KcliError``; the CLI's
error boundary prints its message as one line on stderr and exits with its ``exit_code``.
"""

from __future__ import annotations


class KcliError(Exception):
    """An error with a message fit to show a user as one line."""

    exit_code = 1


class UsageError(KcliError):
    """A wrong or missing command-line argument."""

    exit_code = 2


class CorruptRecordError(KcliError):
    """Bytes that do not form a valid record batch (Kafka's CORRUPT_MESSAGE)."""

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position


class InvalidRecordError(KcliError):
    """A well-formed batch whose contents break a rule (Kafka's INVALID_RECORD)."""


class CorruptIndexError(KcliError):
    """An offset or time index that fails its sanity check."""


class CorruptCheckpointError(KcliError):
    """A checkpoint or metadata file that cannot be parsed; the message names the file."""


class OffsetOutOfRangeError(KcliError):
    """A read below the log start offset or above the log end offset."""


class InvalidOffsetError(KcliError):
    """An append whose offsets are not larger than the log's last offset."""
