"""``kcli configs --entity-type users``: SCRAM credentials, as Kafka's ConfigCommand alters and
describes them (KIP-554 through ``--bootstrap-server``; Kafka 2.8's ``/config/users/<user>``
znode through ``--zookeeper``).

``--add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'``
sets a credential per mechanism (iterations 4096 when left out, -1 too through the broker; fewer
than 4096 is Kafka's error); ``--delete-config SCRAM-SHA-512`` removes one. Through the broker
the salt is made here and only the salted password is sent (AlterUserScramCredentials, as Kafka's
admin client does); through ZooKeeper the credential (salt, stored key, server key, iterations)
is computed here and written with the change notification every broker follows.

``--describe`` prints ``SCRAM credential configs for user-principal 'alice' are
SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096`` (a user without credentials: no
line, as Kafka). Through ZooKeeper, Kafka 2.8 prints the stored credential strings; kcli prints
``Configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192`` instead, since a stored
key and a server key let their holder pose as the server or log in as the user (secrets never
leave the process). No password, salt or key is ever printed, in output or errors.

Quota configs (``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``,
``controller_mutation_rate``) are refused with one line: kcli's brokers do not enforce client
quotas yet.
"""

from __future__ import annotations

import re

from kcli.errors import KcliError, UsageError

SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
QUOTA_CONFIGS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
DEFAULT_ITERATIONS = 4096  # Kafka's ConfigCommand.DefaultScramIterations
MIN_ITERATIONS = 4096
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.S)


def parse_credential(mechanism: str, text: str, *, minus_one_is_default: bool = True) -> tuple[int, str]:
    """``[iterations=N,]password=P`` as ConfigCommand reads it: (iterations, password). The
    error names the mechanism, never the value (it holds the password)."""
    found = _CREDENTIAL.fullmatch(text)
    if found is None:
        raise KcliError(f"Invalid credential property {mechanism}=<the value given>: expected [iterations=N,]password=P")
    raw = found.group(1)
    if raw is None or raw == "" or (raw == "-1" and minus_one_is_default):
        iterations = DEFAULT_ITERATIONS
    else:
        iterations = int(raw)
    if iterations < MIN_ITERATIONS:
        raise KcliError(f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} required for {mechanism}")
    return iterations, found.group(2)


def checked_changes(additions: dict[str, str], deletions: list[str], *, default_entity: bool, through: str) -> None:
    """Kafka's checks of a users alteration: SCRAM mechanisms only (quotas are not enforced yet),
    and no default user for credentials."""
    quotas = [key for key in [*additions, *deletions] if key in QUOTA_CONFIGS]
    if quotas:
        raise KcliError(f"quota configs ({', '.join(quotas)}) are not supported by kcli yet: its brokers do not enforce client quotas")
    unknown_adds = [key for key in additions if key not in SCRAM_MECHANISMS]
    unknown_deletes = [key for key in deletions if key not in SCRAM_MECHANISMS]
    if through == "bootstrap":
        if unknown_adds:
            raise UsageError(f"Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. Unexpected config names: Set({', '.join(unknown_adds)})")
        if unknown_deletes:
            raise UsageError(f"Only quota and SCRAM credential configs can be deleted for 'users' using --bootstrap-server. Unexpected config names: Set({', '.join(unknown_deletes)})")
        if default_entity:
            raise UsageError("The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server.")
    elif unknown_adds or unknown_deletes:
        raise KcliError(f"unknown user configs {', '.join(unknown_adds + unknown_deletes)}: kcli stores SCRAM credentials ({', '.join(SCRAM_MECHANISMS)}) for users")


def scram_line(user: str, credentials: list[tuple[str, int]]) -> str:
    described = ", ".join(f"{mechanism}=iterations={iterations}" for mechanism, iterations in credentials)
    return f"SCRAM credential configs for user-principal '{user}' are {described}"


# -- through the broker ----------------------------------------------------------------------------


def alter_through_broker(session, out, user: str, additions: dict[str, str], deletions: list[str]) -> None:
    upsertions = []
    for mechanism, text in additions.items():
        iterations, password = parse_credential(mechanism, text)
        upsertions.append((user, mechanism, iterations, password))
    results = session.run(session.admin.alter_user_scram_credentials([(user, m) for m in deletions], upsertions))
    error = results.get(user)
    if error is not None:
        raise error
    out.line(f"Completed updating config for user {user}.")


def describe_through_broker(session, out, user: str | None) -> None:
    results = session.run(session.admin.describe_user_scram_credentials(None if user is None else [user]))
    from kcli.errors import ErrorCode

    for name, result in results.items():
        if isinstance(result, KcliError):
            if result.error_code == ErrorCode.RESOURCE_NOT_FOUND:
                continue  # no credentials: Kafka's users() leaves the user out
            out.line(f"Error retrieving SCRAM credential configs for user-principal '{name}': {result.java_class.rsplit('.', 1)[-1]}: {result}")
            continue
        if out.json:
            out.obj({"entity_type": "users", "entity_name": name, "scram_credentials": [{"mechanism": m, "iterations": i} for m, i in result]})
        else:
            out.line(scram_line(name, result))


# -- through ZooKeeper (Kafka 2.8) --------------------------------------------------------------------


def alter_through_zookeeper(zk_client, out, user: str, additions: dict[str, str], deletions: list[str]) -> None:
    from kcli.broker.security.credential_cache import sanitize
    from kcli.errors import ErrorCode, KafkaError
    from kcli.metadata import zk_paths as zk
    from kcli.security import scram

    name = sanitize(user)
    configs = zk_client.entity_configs(zk.CONFIG_TYPE_USERS, name)
    missing = [key for key in deletions if key not in configs]
    if missing:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid config(s): {','.join(missing)}")
    for mechanism, text in additions.items():
        iterations, password = parse_credential(mechanism, text, minus_one_is_default=False)
        configs[mechanism] = scram.generate_credential(scram.MECHANISMS[mechanism], password, iterations).to_text()
    for key in deletions:
        configs.pop(key, None)
    zk_client.write_entity_config(zk.CONFIG_TYPE_USERS, name, configs)
    out.line(f"Completed updating config for entity: user-principal '{user}'.")


def describe_through_zookeeper(zk_client, out, user: str | None) -> None:
    from kcli.broker.security.credential_cache import desanitize, sanitize
    from kcli.metadata import zk_paths as zk
    from kcli.security.scram import ScramCredential, ScramError

    names = [sanitize(user)] if user is not None else zk_client.entities_with_config(zk.CONFIG_TYPE_USERS)
    for name in names:
        shown = []
        for key, value in zk_client.entity_configs(zk.CONFIG_TYPE_USERS, name).items():
            if key in SCRAM_MECHANISMS:
                try:
                    value = f"iterations={ScramCredential.from_text(value).iterations}"
                except ScramError:
                    value = "<not a SCRAM credential>"
            shown.append(f"{key}={value}")
        out.line(f"Configs for user-principal '{desanitize(name)}' are {','.join(shown)}")
