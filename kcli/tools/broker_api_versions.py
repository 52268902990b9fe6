"""``kcli broker-api-versions``: Kafka's kafka-broker-api-versions.sh, with Kafka 3.9's output.

For every live broker (the Metadata answer's brokers, in its order)::

    127.0.0.1:9092 (id: 0 rack: null) -> (
    \tProduce(0): 3 to 11 [usable: 9],
    \tFetch(1): 4 to 17 [usable: 12],
    ...
    \tLeaderAndIsr(4): UNSUPPORTED,
    ...
    )

One line per API the broker advertises, plus ``UNSUPPORTED`` for each API of Kafka 3.9's client
APIs it does not, in API key order; ``UNKNOWN(n)`` names a key Kafka 3.9 does not know. A range
``a to b`` is written ``a`` when both ends are equal. A broker that cannot be reached prints
``host:port (id: N rack: null) -> ERROR: <message>`` and makes the exit code 1.

The ``usable`` version is the one the *client* would use, as in Kafka: there it is the highest
version both the Java client and the broker speak; here it is the highest version both kcli's
client and the broker speak, so kcli's caps (``CLIENT_MAX_VERSIONS``, e.g. Produce v9) show
through. For APIs kcli's client never sends, its protocol layer's highest known version takes
the Java client's place. ``[unusable: node too new]`` / ``[unusable: node too old]`` are Kafka's;
``[unusable: unknown to kcli]`` marks an API kcli knows no version of (ZooKeeper-era inter-broker
APIs).

``--output json`` writes one object per broker: ``{"id": int, "host": str, "port": int, "rack":
str | null, "error": str | null, "apis": [{"key": int, "name": str, "min_version": int,
"max_version": int, "usable_version": int | null, "unusable": str | null}]}`` listing only the
APIs the broker advertises.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kcli.output import Format
from kcli.tools.options import BootstrapServerOpt, CommandConfigOpt

# The APIs Kafka 3.9 serves only to controllers; every other one is a client API, listed as
# UNSUPPORTED when a broker does not advertise it.
CONTROLLER_ONLY_APIS = (
    "VOTE", "BEGIN_QUORUM_EPOCH", "END_QUORUM_EPOCH", "FETCH_SNAPSHOT", "BROKER_REGISTRATION", "BROKER_HEARTBEAT",
    "CONTROLLER_REGISTRATION", "ASSIGN_REPLICAS_TO_DIRS", "UPDATE_RAFT_VOTER",
)


def register(app: typer.Typer) -> None:
    app.command("broker-api-versions", help="This tool helps to retrieve broker version information.", no_args_is_help=True)(broker_api_versions)


def broker_api_versions(
    bootstrap_server: BootstrapServerOpt = None,
    command_config: CommandConfigOpt = None,
    output: Annotated[Format, typer.Option("--output", help="plain: Kafka's lines; json: one JSON object per broker.")] = Format.plain,
) -> None:
    from kcli.errors import UsageError
    from kcli.output import Output
    from kcli.tools._admin_common import AdminSession, client_settings, load_command_config

    if bootstrap_server is None:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    out = Output(output)
    settings = client_settings(load_command_config(command_config), bootstrap=bootstrap_server, warn=out.diag)
    with AdminSession(settings) as session:
        brokers = session.run(session.admin.broker_api_versions())
    failed = False
    try:
        for broker in brokers:
            node = broker.node
            label = f"{node.host}:{node.port} (id: {node.node_id} rack: {node.rack if node.rack is not None else 'null'})"
            if broker.error is not None:
                failed = True
            if out.json:
                out.obj(_json(broker))
            elif broker.error is not None:
                out.line(f"{label} -> ERROR: {broker.error}")
            else:
                out.line(f"{label} -> (\n\t" + ",\n\t".join(api_lines(broker.versions)) + "\n)")
    finally:
        out.flush()
    if failed:
        raise typer.Exit(1)


def api_lines(versions: dict[int, tuple[int, int]]) -> list[str]:
    """Kafka's NodeApiVersions.toString entries, in API key order."""
    from kcli.client.admin import usable_version
    from kcli.protocol.api_keys import API_NAMES, ApiKey, kafka_name

    controller_only = {ApiKey[name] for name in CONTROLLER_ONLY_APIS}
    lines = {}
    for key, (low, high) in versions.items():
        name = kafka_name(key)
        text = f"{name}({key}): " if name is not None else f"UNKNOWN({key}): "
        text += str(low) if low == high else f"{low} to {high}"
        if name is not None:
            usable = usable_version(key, low, high)
            text += f" [usable: {usable}]" if isinstance(usable, int) else f" [unusable: {usable}]"
        lines[key] = text
    for key, name in enumerate(API_NAMES):
        if key not in lines and key not in controller_only:
            lines[key] = f"{name}({key}): UNSUPPORTED"
    return [lines[key] for key in sorted(lines)]


def _json(broker) -> dict:
    from kcli.client.admin import usable_version
    from kcli.protocol.api_keys import kafka_name

    node = broker.node
    apis = []
    for key, (low, high) in sorted((broker.versions or {}).items()):
        usable = usable_version(key, low, high)
        apis.append(
            {
                "key": key,
                "name": kafka_name(key),
                "min_version": low,
                "max_version": high,
                "usable_version": usable if isinstance(usable, int) else None,
                "unusable": None if isinstance(usable, int) else usable,
            }
        )
    return {
        "id": node.node_id,
        "host": node.host,
        "port": node.port,
        "rack": node.rack,
        "error": None if broker.error is None else str(broker.error),
        "apis": apis,
    }
