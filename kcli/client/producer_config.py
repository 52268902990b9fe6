"""The producer's settings (Kafka's ProducerConfig): the Java producer's property names, their
types, defaults and checks, with Kafka's ConfigException wording for a bad value.

``ProducerConfig.from_properties({"acks": "all", "linger.ms": "5"})`` reads Java properties; an
unknown name is warned about (logged) as Kafka does, a known one kcli has no use for is taken
without effect (``ACCEPTED_PROPERTIES``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kcli.client.security_config import client_security, is_security_key
from kcli.errors import KcliError
from kcli.storage.compression import CompressionType

__all__ = ["ProducerConfig", "PRODUCER_PROPERTIES", "ACCEPTED_PROPERTIES", "parse_properties"]

log = logging.getLogger(__name__)

INT32_MAX = 2**31 - 1
MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5


PARTITIONER_CLASSES = {
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner": "default",
    "org.apache.kafka.clients.producer.UniformStickyPartitioner": "sticky",
    "org.apache.kafka.clients.producer.RoundRobinPartitioner": "round_robin",
}


@dataclasses.dataclass
class ProducerConfig:
    """The producer's settings, named after the Java properties they come from."""

    bootstrap_servers: str | None = None
    client_id: str = ""
    acks: int = -1
    batch_size: int = 16384
    linger_ms: int = 0
    compression_type: CompressionType = CompressionType.NONE
    max_request_size: int = 1048576
    buffer_memory: int = 33554432
    max_block_ms: int = 60000
    retries: int = INT32_MAX
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    request_timeout_ms: int = 30000
    delivery_timeout_ms: int = 120000
    enable_idempotence: bool = True
    max_in_flight: int = 5
    metadata_max_age_ms: int = 300000
    partitioner: str = "default"  # default, sticky (keys ignored), round_robin
    partitioner_ignore_keys: bool = False
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60000
    security: Any = dataclasses.field(default=None, repr=False)  # security_config.ClientSecurity

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, warn: Callable[[str], None] | None = None) -> ProducerConfig:
        """The settings of Java producer ``props``; unknown names are warned about as Kafka does.

        Raises ``KcliError`` with Kafka's ConfigException wording for a bad value.
        """
        say = warn or _warn
        config = cls()
        given: set[str] = set()
        for name, raw in props.items():
            spec = PRODUCER_PROPERTIES.get(name)
            if spec is not None:
                attribute, convert = spec
                setattr(config, attribute, convert(name, str(raw)))
                given.add(name)
            elif name not in ACCEPTED_PROPERTIES and not is_security_key(name):
                say(f"The configuration '{name}' was supplied but isn't a known config.")
        config.security = client_security(props)
        config._check(given)
        return config

    def _check(self, given: set[str]) -> None:
        explicit = "enable.idempotence" in given
        if self.enable_idempotence:
            reason = None
            if self.retries == 0:
                reason = "Must set retries to non-zero when using the idempotent producer."
            elif self.acks != -1:
                reason = "Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence."
            elif self.max_in_flight > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
                reason = "Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent producer."
            if reason is not None:
                if explicit:
                    raise KcliError(reason)
                self.enable_idempotence = False
        # After the checks above, which may turn idempotence off (Kafka checks in this order).
        if self.transactional_id is not None and not self.enable_idempotence:
            raise KcliError("Cannot set a transactional.id without also enabling idempotence.")
        minimum = self.linger_ms + self.request_timeout_ms
        if self.delivery_timeout_ms < minimum:
            if "delivery.timeout.ms" in given:
                raise KcliError("delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms")
            self.delivery_timeout_ms = minimum


def _int(minimum: int | None = 0, maximum: int = INT32_MAX, kind: str = "INT") -> Callable[[str, str], int]:
    def convert(name: str, value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise KcliError(f"Invalid value {value} for configuration {name}: Not a number of type {kind}") from None
        if minimum is not None and number < minimum:
            raise KcliError(f"Invalid value {value} for configuration {name}: Value must be at least {minimum}")
        if number > maximum:
            raise KcliError(f"Invalid value {value} for configuration {name}: Value must be no more than {maximum}")
        return number

    return convert


def _long(minimum: int | None = 0) -> Callable[[str, str], int]:
    return _int(minimum, 2**63 - 1, "LONG")


def _bool(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise KcliError(f"Invalid value {value} for configuration {name}: Expected value to be either true or false")
    return text == "true"


def _acks(name: str, value: str) -> int:
    text = value.strip()
    if text not in ("all", "-1", "0", "1"):
        raise KcliError(f"Invalid value {value} for configuration {name}: String must be one of: all, -1, 0, 1")
    return -1 if text == "all" else int(text)


def _compression(name: str, value: str) -> CompressionType:
    text = value.strip()
    names = [c.label for c in CompressionType]
    if text not in names:
        raise KcliError(f"Invalid value {value} for configuration {name}: String must be one of: {', '.join(names)}")
    return CompressionType.from_name(text)


def _partitioner(name: str, value: str) -> str:
    text = value.strip()
    if not text:
        return "default"
    if text not in PARTITIONER_CLASSES:
        raise KcliError(f"Invalid value {value} for configuration {name}: Class {text} could not be found.")
    return PARTITIONER_CLASSES[text]


def _string(_name: str, value: str) -> str:
    return value.strip()


def _optional_string(_name: str, value: str) -> str | None:
    return value.strip() or None


# Java producer property -> (ProducerConfig attribute, converter).
PRODUCER_PROPERTIES: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "bootstrap.servers": ("bootstrap_servers", _string),
    "client.id": ("client_id", _string),
    "acks": ("acks", _acks),
    "batch.size": ("batch_size", _int()),
    "linger.ms": ("linger_ms", _long()),
    "compression.type": ("compression_type", _compression),
    "max.request.size": ("max_request_size", _int()),
    "buffer.memory": ("buffer_memory", _long()),
    "max.block.ms": ("max_block_ms", _long()),
    "retries": ("retries", _int()),
    "retry.backoff.ms": ("retry_backoff_ms", _long()),
    "retry.backoff.max.ms": ("retry_backoff_max_ms", _long()),
    "request.timeout.ms": ("request_timeout_ms", _int()),
    "delivery.timeout.ms": ("delivery_timeout_ms", _int()),
    "enable.idempotence": ("enable_idempotence", _bool),
    "max.in.flight.requests.per.connection": ("max_in_flight", _int(1)),
    "metadata.max.age.ms": ("metadata_max_age_ms", _long()),
    "partitioner.class": ("partitioner", _partitioner),
    "partitioner.ignore.keys": ("partitioner_ignore_keys", _bool),
    "transactional.id": ("transactional_id", _optional_string),
    "transaction.timeout.ms": ("transaction_timeout_ms", _int()),
}

# Known Java producer settings taken without effect: connection-level ones, the serializers
# (records are bytes), metrics, and tuning kcli does not have.
ACCEPTED_PROPERTIES = frozenset(
    {
        "key.serializer", "value.serializer", "send.buffer.bytes", "receive.buffer.bytes", "reconnect.backoff.ms",
        "reconnect.backoff.max.ms", "connections.max.idle.ms", "socket.connection.setup.timeout.ms",
        "socket.connection.setup.timeout.max.ms", "client.dns.lookup", "metadata.max.idle.ms", "metric.reporters",
        "metrics.num.samples", "metrics.sample.window.ms", "metrics.recording.level", "auto.include.jmx.reporter",
        "enable.metrics.push", "interceptor.classes", "partitioner.adaptive.partitioning.enable",
        "partitioner.availability.timeout.ms", "compression.gzip.level", "compression.lz4.level",
        "compression.zstd.level", "security.providers", "metadata.recovery.strategy",
    }
)


def _warn(message: str) -> None:
    # A library logs; the tool that gave no ``warn`` decides where its logs go.
    log.warning(message)


def parse_properties(items: Iterable[str]) -> dict[str, str]:
    """``key=value`` strings as Kafka's tools read them: split at the first ``=``."""
    props = {}
    for item in items:
        key, _sep, value = item.partition("=")
        props[key] = value
    return props
