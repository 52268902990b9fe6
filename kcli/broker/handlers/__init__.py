"""The API handler registry: one module per API, each declaring the versions it serves.

A handler module has ``API_KEY``, ``VERSIONS`` (lowest, highest) and ``handle(ctx, request)``;
its docstring opens with "Name: vLOW-vHIGH" and says how it behaves. ``handle`` is a plain
function, which the network layer calls as soon as the request is read, unless the API may have
to wait (Fetch's long poll, a JoinGroup or SyncGroup until the rebalance completes): then it is an
``async def``, run by the connection's task. It takes the decoded kio request and returns one of:

- a mapping of response fields, written in the request's response version (``mapping_encoder``, with ``messages.build``'s rules);
- a ``RawResponse`` (Fetch: chunks of bytes and file ranges);
- ``None``: no response at all (Produce with acks=0).

ApiVersions answers from this registry, so the advertised ranges are the served ones.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable

HANDLER_MODULES = (
    "produce",
    "fetch",
    "list_offsets",
    "metadata",
    "find_coordinator",
    "api_versions",
    "create_topics",
    "delete_topics",
    "create_partitions",
    "describe_configs",
    "alter_configs",
    "incremental_alter_configs",
    "delete_records",
    "describe_cluster",
    "describe_log_dirs",
    "offset_for_leader_epoch",
    "init_producer_id",
    "describe_producers",
    "join_group",
    "sync_group",
    "heartbeat",
    "leave_group",
    "offset_commit",
    "offset_fetch",
    "list_groups",
    "describe_groups",
    "delete_groups",
    "offset_delete",
    "add_partitions_to_txn",
    "add_offsets_to_txn",
    "txn_offset_commit",
    "end_txn",
    "write_txn_markers",
    "describe_transactions",
    "list_transactions",
)


@dataclass(frozen=True, slots=True)
class RawResponse:
    """A response body already encoded, as chunks (bytes, or file ranges with ``.size``)."""

    chunks: list[Any]
    size: int


@dataclass(frozen=True, slots=True)
class Api:
    key: int
    name: str
    min_version: int
    max_version: int
    handle: Callable[..., Any]
    waits: bool  # handle is a coroutine function

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


def load_registry(names: tuple[str, ...] = HANDLER_MODULES) -> dict[int, Api]:
    registry: dict[int, Api] = {}
    for name in names:
        module = importlib.import_module(f"{__name__}.{name}")
        low, high = module.VERSIONS
        registry[module.API_KEY] = Api(module.API_KEY, name, low, high, module.handle, inspect.iscoroutinefunction(module.handle))
    return dict(sorted(registry.items()))
