"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554) as Kafka 2.8's
ZkAdminManager answers them: credentials read from the cache, written to ``/config/users/<user>``
with a change notification, so every broker's cache picks them up.

An upsertion carries the salt and the salted password the client computed; the broker keeps
StoredKey and ServerKey derived from it, never the salted password. Per user: an unknown
mechanism is UNSUPPORTED_SASL_MECHANISM, iterations outside 4096..16384 or an empty name
UNACCEPTABLE_CREDENTIAL, the same user and mechanism twice DUPLICATE_RESOURCE, the deletion of
a credential that does not exist RESOURCE_NOT_FOUND; a user with any error is not written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kcli.broker.security.credential_cache import CredentialCache, sanitize, user_config_path
from kcli.errors import ErrorCode
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import NoNodeError
from kcli.security import scram


def describe(cache: CredentialCache, users: Iterable[str] | None) -> list[dict]:
    held = cache.users()
    if not users:
        names, explicit = sorted(held), False
    else:
        names, explicit = list(users), True
    results, seen = [], set()
    duplicates = {name for name in names if names.count(name) > 1}
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        if name in duplicates:
            results.append(_result(name, ErrorCode.DUPLICATE_RESOURCE, f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}"))
        elif name not in held and explicit:
            results.append(_result(name, ErrorCode.RESOURCE_NOT_FOUND, f"Attempt to describe a user credential that does not exist: {name}"))
        else:
            infos = [{"mechanism": scram.MECHANISM_TYPE_IDS[m], "iterations": c.iterations} for m, c in sorted(held.get(name, {}).items())]
            results.append({**_result(name, ErrorCode.NONE, None), "credential_infos": infos})
    return results


def _result(user: str, code: ErrorCode, message: str | None) -> dict:
    return {"user": user, "error_code": code, "error_message": message, "credential_infos": []}


def alter(zk_client: Any, cache: CredentialCache, deletions: Iterable[Any], upsertions: Iterable[Any]) -> list[dict]:
    """Apply the request (on the metadata thread); one result per user."""
    errors: dict[str, tuple[ErrorCode, str]] = {}
    changes: dict[str, list[tuple[str, Any]]] = {}
    counts: dict[tuple[str, int], int] = {}
    for item in [*deletions, *upsertions]:
        counts[(item.name, int(item.mechanism))] = counts.get((item.name, int(item.mechanism)), 0) + 1

    def check(item: Any) -> scram.ScramMechanism | None:
        mechanism = scram.MECHANISM_TYPES.get(int(item.mechanism))
        if not item.name:
            errors.setdefault(item.name, (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"))
        elif mechanism is None:
            errors.setdefault(item.name, (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"))
        elif counts[(item.name, int(item.mechanism))] > 1:
            errors.setdefault(item.name, (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"))
        else:
            return mechanism
        return None

    for item in deletions:
        mechanism = check(item)
        if mechanism is not None:
            if cache.credential(item.name, mechanism.name) is None:
                errors.setdefault(item.name, (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"))
            changes.setdefault(item.name, []).append((mechanism.name, None))
    for item in upsertions:
        mechanism = check(item)
        if mechanism is None:
            continue
        if item.iterations < scram.MIN_ITERATIONS:
            errors.setdefault(item.name, (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"))
        elif item.iterations > scram.MAX_ITERATIONS:
            errors.setdefault(item.name, (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"))
        else:
            credential = scram.credential_from_salted(mechanism, bytes(item.salted_password), bytes(item.salt), int(item.iterations))
            changes.setdefault(item.name, []).append((mechanism.name, credential))
    results = []
    for user in dict.fromkeys([*errors, *changes]):
        if user in errors:
            code, message = errors[user]
            results.append({"user": user, "error_code": code, "error_message": message})
            continue
        _write(zk_client, user, changes[user])
        cache.reload(user)
        results.append({"user": user, "error_code": ErrorCode.NONE, "error_message": None})
    return results


def _write(zk_client: Any, user: str, changes: list[tuple[str, Any]]) -> None:
    try:
        config = zk.decode_entity_config(zk_client.store.get(user_config_path(user))[0])
    except NoNodeError:
        config = {}
    for mechanism, credential in changes:
        if credential is None:
            config.pop(mechanism, None)
        else:
            config[mechanism] = credential.to_text()
    zk_client.write_entity_config(zk.CONFIG_TYPE_USERS, sanitize(user), config)
