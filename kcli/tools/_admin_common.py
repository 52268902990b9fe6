"""What the admin tools share: connection settings, a blocking admin session, and Kafka's ways of
naming and ordering things in their output.

- ``client_settings`` turns Java admin-client properties (``--command-config`` files, plus the
  ``--bootstrap-server`` flag) into ``NetworkClient`` arguments, warning about names Kafka's admin
  client does not know, as Kafka does.
- ``AdminSession`` opens a ``NetworkClient`` and an ``Admin`` on a private event loop and runs admin
  coroutines one by one for a blocking tool.
- ``TopicFilter`` is Kafka's ``IncludeList`` (a topic regex, as ``--topic`` takes it);
  Topic ids are printed and read with ``kcli.common``'s Uuid text form.

Imported by the tools' command functions only (it pulls in the client).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from kcli.common import is_internal
from kcli.config import read_properties
from kcli.errors import KcliError, UsageError
from kcli.output import Output

T = TypeVar("T")

# The property names Kafka 3.9's admin client defines (AdminClientConfig); ssl.* and sasl.*
# settings are known too. Only some of them mean something to kcli's client.
ADMIN_CONFIG_NAMES = frozenset(
    {
        "bootstrap.servers",
        "bootstrap.controllers",
        "client.dns.lookup",
        "client.id",
        "metadata.max.age.ms",
        "send.buffer.bytes",
        "receive.buffer.bytes",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "retry.backoff.ms",
        "retry.backoff.max.ms",
        "enable.metrics.push",
        "request.timeout.ms",
        "socket.connection.setup.timeout.ms",
        "socket.connection.setup.timeout.max.ms",
        "connections.max.idle.ms",
        "retries",
        "default.api.timeout.ms",
        "metrics.sample.window.ms",
        "metrics.num.samples",
        "metric.reporters",
        "metrics.recording.level",
        "auto.include.jmx.reporter",
        "security.providers",
        "security.protocol",
        "metadata.recovery.strategy",
    }
)


def load_command_config(path: str | None) -> dict[str, str]:
    """A ``--command-config`` properties file (empty when no file is given)."""
    return {} if path is None else read_properties(path)


def client_settings(
    props: Mapping[str, str],
    *,
    bootstrap: str | None = None,
    client_id: str | None = None,
    warn: Callable[[str], None] | None = None,
    known: frozenset[str] = ADMIN_CONFIG_NAMES,
) -> dict[str, Any]:
    """``NetworkClient`` keyword arguments from Java client properties.

    ``bootstrap`` (the tool's flag) wins over ``bootstrap.servers``; ``client_id`` is the tool's
    default, used when the properties set none. Understood: bootstrap.servers, client.id,
    request.timeout.ms, retries, retry.backoff.ms, retry.backoff.max.ms, and the security keys
    (``client.security_config``: TLS and SASL). Names outside ``known`` (and not ssl.* / sasl.*)
    are reported through ``warn`` in Kafka's words.
    """
    from kcli.client.security_config import client_security, is_security_key

    warn = warn or Output().diag
    for name in props:
        if name not in known and not is_security_key(name):
            warn(f"The configuration '{name}' was supplied but isn't a known config.")
    security = client_security(props)
    servers = bootstrap if bootstrap is not None else props.get("bootstrap.servers")
    if not servers or not servers.strip():
        raise UsageError("no bootstrap server given: use --bootstrap-server or bootstrap.servers")
    settings: dict[str, Any] = {"bootstrap_servers": servers}
    if security is not None:
        settings["security"] = security
    chosen_id = props.get("client.id") or client_id
    if chosen_id:
        settings["client_id"] = chosen_id
    if "request.timeout.ms" in props:
        settings["request_timeout"] = number_setting(props, "request.timeout.ms", "INT") / 1000
    if "retries" in props:
        settings["retries"] = int(number_setting(props, "retries", "INT"))
    if "retry.backoff.ms" in props:
        settings["retry_backoff"] = number_setting(props, "retry.backoff.ms", "LONG") / 1000
    if "retry.backoff.max.ms" in props:
        settings["retry_backoff_max"] = number_setting(props, "retry.backoff.max.ms", "LONG") / 1000
    return settings


def number_setting(props: Mapping[str, str], name: str, kafka_type: str) -> float:
    """A non-negative INT (Java's Integer) or LONG setting, in ConfigDef's words when it is not."""
    text = props[name].strip()
    bits = 32 if kafka_type == "INT" else 64
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise KcliError(f"Invalid value {text} for configuration {name}: Not a number of type {kafka_type}") from None
    if value < 0:
        raise KcliError(f"Invalid value {text} for configuration {name}: Value must be at least 0")
    return value


class AdminSession:
    """A cluster connection and its ``Admin`` for a blocking tool::

        with AdminSession(settings) as session:
            topics = session.run(session.admin.list_topics())
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = dict(settings)

    def __enter__(self) -> AdminSession:
        from kcli.client.admin import Admin
        from kcli.client.network_client import NetworkClient
        from kcli.client.sync import SyncRunner

        self.runner = SyncRunner()
        try:
            self.cluster = NetworkClient(**self.settings)
            self.runner.run(self.cluster.__aenter__())
        except BaseException:
            self.runner.close()
            raise
        self.admin = Admin(self.cluster)
        return self

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(coroutine)

    def __exit__(self, *exc: object) -> None:
        try:
            self.runner.run(self.cluster.close())
        finally:
            self.runner.close()


class TopicFilter:
    """Kafka's ``IncludeList``: a topic regex, matched against the whole name. Commas stand for
    ``|``; spaces and surrounding quotes are dropped, as Kafka does for values from files."""

    def __init__(self, raw: str) -> None:
        regex = raw.strip().replace(",", "|").replace(" ", "")
        regex = re.sub(r"^[\"']+", "", regex)
        regex = re.sub(r"[\"']+$", "", regex)
        self.regex = regex
        try:
            self._pattern = re.compile(regex)
        except re.error:
            raise KcliError(f"{regex} is an invalid regex.") from None

    def allows(self, topic: str, exclude_internal: bool = False) -> bool:
        return self._pattern.fullmatch(topic) is not None and not (exclude_internal and is_internal(topic))


def validate_bootstrap_server(servers: str) -> None:
    """Kafka's ToolsUtils.validateBootstrapServer: ``host:port`` entries separated by commas."""
    if not servers.strip():
        raise UsageError("Error while validating the bootstrap address")
    for item in servers.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise UsageError("Please provide valid host:port like host1:9091,host2:9092")


def option(name: str) -> str:
    """An option as Kafka's option parser names it in messages: ``[name]``."""
    return f"[{name}]"


def zookeeper_not_available() -> KcliError:
    return KcliError("--zookeeper is not available yet: kcli's tools reach the cluster through --bootstrap-server")


def check_brokers(*servers: str | None, props: Mapping[str, str] | None = None) -> None:
    """Connect to each given cluster once and let go: a server that is down or is not a Kafka
    broker fails as one line before a slow start (a Spark session) would bury it in a traceback.
    ``props`` are client properties (``request.timeout.ms``, ...) as the command passes them on."""
    for bootstrap in servers:
        if bootstrap:
            with AdminSession(client_settings(props or {}, bootstrap=bootstrap, warn=lambda _line: None)):
                pass
