"""Runs ``kcli`` (its arguments follow) with every Produce request from librdkafka (client id
``rdkafka``) appended, size prefix and all, to the file named by KCLI_RECORD_PRODUCE: the
recording bench/produce_replay.py sends again, byte for byte, to any tree's broker."""

import os
import runpy
import struct
import sys

from kcli.broker.network import server

_RECORD = open(os.environ["KCLI_RECORD_PRODUCE"], "ab", buffering=0)  # noqa: SIM115 (open for the process's life)
_received = server.Connection.frame_received


def _frame_received(self, body):
    # Request header: api_key int16, api_version int16, correlation_id int32, client_id string.
    if len(body) > 16 and struct.unpack_from(">h", body, 0)[0] == 0 and bytes(body[10:17]) == b"rdkafka":
        _RECORD.write(struct.pack(">i", len(body)) + bytes(body))
    return _received(self, body)


server.Connection.frame_received = _frame_received
sys.argv = ["kcli", *sys.argv[1:]]
runpy.run_module("kcli", run_name="__main__", alter_sys=True)
