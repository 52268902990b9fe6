"""The API handler registry: one module per API, each declaring the versions it serves.

A handler module has ``API_KEY``, ``VERSIONS`` (lowest, highest) and ``handle(ctx, request)``;
its docstring opens with "Name: vLOW-vHIGH" and says how it behaves. ``handle`` is a plain
function, which the network layer calls as soon as the request is read, unless the API may have
to wait (Fetch's long poll, a JoinGroup or SyncGroup until the rebalance completes): then it is an
``async def``, run by the connection's task. It takes the decoded request (a kio entity; for Produce,
``protocol.produce_request``'s tuples of the same fields) and returns one of:

- a mapping of response fields, written in the request's response version (``mapping_encoder``, with ``messages.build``'s rules);
- a ``RawResponse`` (Fetch: chunks of bytes and file ranges);
- ``None``: no response at all (Produce with acks=0).

The registry is every module of this package (found with ``pkgutil``, so a new module is served
and advertised by being here); a module whose name starts with ``_`` is a helper, not an API.
ApiVersions answers from this registry, so the advertised ranges are the served ones. A module
that sets ``CLUSTER_MODE_ONLY = True`` (the controller's requests to brokers, and AlterPartition)
is served only by brokers in cluster mode: a single-process broker, like a KRaft-mode Kafka
broker, neither serves nor advertises it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Callable

from kcli.errors import KcliError


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


def handler_modules(package: str = __name__) -> list[str]:
    """The names of the handler modules of ``package``: every module but the ``_``-prefixed."""
    path = importlib.import_module(package).__path__
    return sorted(info.name for info in pkgutil.iter_modules(path) if not info.name.startswith("_"))


def load_registry(package: str = __name__, *, cluster_mode: bool = True) -> dict[int, Api]:
    """Every handler module of ``package`` by API key (without ``cluster_mode``, those not marked
    ``CLUSTER_MODE_ONLY``); a module that does not declare an API, or declares one another module
    serves, stops the broker with one line naming it."""
    registry: dict[int, Api] = {}
    for name in handler_modules(package):
        module = importlib.import_module(f"{package}.{name}")
        if not cluster_mode and getattr(module, "CLUSTER_MODE_ONLY", False):
            continue
        key, versions, handle = (getattr(module, attr, None) for attr in ("API_KEY", "VERSIONS", "handle"))
        if not isinstance(key, int) or not isinstance(versions, tuple) or len(versions) != 2 or not callable(handle):
            raise KcliError(f"handler module {package}.{name} must declare API_KEY, VERSIONS (lowest, highest) and handle()")
        if key in registry:
            raise KcliError(f"handler modules {registry[key].name} and {name} both serve API key {key}")
        low, high = versions
        registry[key] = Api(key, name, low, high, handle, inspect.iscoroutinefunction(handle))
    return dict(sorted(registry.items()))


def api_ranges(registry: Mapping[int, Api]) -> list[dict[str, int]]:
    """Each served API's version range, as ApiVersions lists it."""
    return [{"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version} for api in registry.values()]
