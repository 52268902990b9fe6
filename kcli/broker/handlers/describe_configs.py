"""DescribeConfigs: v1-4

Behaviour: describes each resource's configs, filtered to ``configuration_keys`` when that list
is non-empty. TOPIC (2): every topic config with its effective value and source; an illegal name
answers INVALID_TOPIC_EXCEPTION with the reason, a missing topic UNKNOWN_TOPIC_OR_PARTITION
without a message. BROKER (4): the name "" describes the cluster-wide dynamic defaults (only the
keys set there); this broker's id describes every broker config; any other name answers
INVALID_REQUEST ("Broker id must be an integer, ..." or "Unexpected broker id, ..."), as a
ZooKeeper-mode Kafka 3.9 broker does. BROKER_LOGGER (8): this broker's loggers with their
effective levels in log4j's names (TRACE, DEBUG, INFO, WARN, ERROR, FATAL), the root logger as
``root``; the name must be this broker's id. CLIENT_METRICS (16) answers INVALID_REQUEST (those
configs exist only on KRaft clusters). A resource type Kafka does not know fails the whole
request: every resource answers INVALID_REQUEST. Synonyms (in precedence order) and
documentation are included on request; secrets are reported with a null value.

With an authorizer a topic's configs need DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED),
the other resources' on the cluster (CLUSTER_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v1 adds synonyms and the config source (v0, with is_default, is not served); v3
adds documentation and the config type; v4 is flexible.
"""

from __future__ import annotations

import logging

from kcli.broker.log_levels import LOG4J_LEVELS
from kcli.broker.config import config_describer
from kcli.broker.config.config_describer import ConfigEntry, ConfigSource
from kcli.metadata import topic_names
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.java_compat import parse_int
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.DESCRIBE_CONFIGS
VERSIONS = (1, 4)

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS = 2, 4, 8, 16
RESOURCE_TYPE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER", CLIENT_METRICS: "CLIENT_METRICS"}
KNOWN_TYPES = frozenset(RESOURCE_TYPE_NAMES)

ROOT_LOGGER = "root"


log = logging.getLogger(__name__)


def handle(ctx, request):
    resources = request.resources
    unknown = [r for r in resources if r.resource_type not in KNOWN_TYPES]
    if unknown:
        # Kafka's authorization step throws for such a type, which fails the whole request.
        log.info("DescribeConfigs with unknown resource type %d for resource %s", unknown[0].resource_type, unknown[0].resource_name)
        return {"results": [_failed(r, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST.message) for r in resources]}
    synonyms = request.include_synonyms
    documentation = getattr(request, "include_documentation", False)
    results = []
    for r in resources:
        refused = config_authorization_error(ctx, AclOperation.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
        results.append(_failed(r, refused, None) if refused is not None else _describe(ctx.broker, r, synonyms, documentation))
    return {"results": results}


def _describe(broker, resource, synonyms: bool, documentation: bool) -> dict:
    keys = resource.configuration_keys or None
    try:
        if resource.resource_type == TOPIC:
            configs = [_entry(e) for e in _topic_entries(broker, resource.resource_name, keys, synonyms, documentation)]
        elif resource.resource_type == BROKER:
            configs = [_entry(e) for e in _broker_entries(broker, resource.resource_name, keys, synonyms, documentation)]
        elif resource.resource_type == BROKER_LOGGER:
            configs = _logger_entries(broker, resource.resource_name, keys)
        else:
            configs = _client_metrics(resource.resource_name)
    except KcliError as e:
        log.info("Error processing describe configs request for resource %s: %s", resource_label(resource.resource_type, resource.resource_name), e)
        return _failed(resource, e.error_code, error_message(e))
    return {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": resource.resource_type, "resource_name": resource.resource_name, "configs": configs}


def _topic_entries(broker, name: str, keys, synonyms: bool, documentation: bool) -> list[ConfigEntry]:
    topic_names.validate(name)
    info = broker.metadata.topic(name)
    if info is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return broker.describe_topic_configs(name, dict(info.configs), keys, include_synonyms=synonyms, include_documentation=documentation)


def _broker_entries(broker, name: str, keys, synonyms: bool, documentation: bool) -> list[ConfigEntry]:
    metadata = broker.metadata
    if not name:
        return config_describer.describe_broker_default_configs(broker.config, metadata.broker_configs(None), keys, synonyms, documentation)
    if parse_node_id(name, "Broker id") != broker.id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker.id} or empty string, but received {name}")
    return config_describer.describe_broker_configs(
        broker.config, metadata.broker_configs(broker.id), keys, synonyms, documentation, dynamic_default=metadata.broker_configs(None)
    )


def _logger_entries(broker, name: str, keys) -> list[dict]:
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    if parse_node_id(name, "Broker id") != broker.id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker.id} but received {name}")
    wanted = set(keys) if keys else None
    return [
        {"name": logger, "value": level, "read_only": False, "config_source": ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, "is_sensitive": False, "synonyms": []}
        for logger, level in current_loggers().items()
        if wanted is None or logger in wanted
    ]


def _client_metrics(name: str) -> list[dict]:
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
    raise KafkaError(ErrorCode.INVALID_REQUEST, "Config type client-metrics is only supported on KRaft clusters")


def _entry(entry: ConfigEntry) -> dict:
    return {
        "name": entry.name,
        "value": entry.value,
        "read_only": entry.read_only,
        "config_source": int(entry.source),
        "is_sensitive": entry.is_sensitive,
        "synonyms": [{"name": s.name, "value": s.value, "source": int(s.source)} for s in entry.synonyms],
        "config_type": int(entry.config_type),
        "documentation": entry.documentation,
    }


def _failed(resource, code: ErrorCode, message: str | None) -> dict:
    return {"error_code": code, "error_message": message, "resource_type": resource.resource_type, "resource_name": resource.resource_name, "configs": []}


# -- shared with AlterConfigs and IncrementalAlterConfigs -------------------------------------------


def config_authorization_error(ctx, operation: AclOperation, resource_type: int, name: str) -> ErrorCode | None:
    """Kafka 2.8's check of a config resource: a topic's configs need ``operation`` on the topic
    (TOPIC_AUTHORIZATION_FAILED), a broker's, a broker logger's or client metrics' on the cluster
    (CLUSTER_AUTHORIZATION_FAILED); None when allowed."""
    if resource_type == TOPIC:
        return None if ctx.authorize(operation, ResourceType.TOPIC, name) else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return None if ctx.authorize_cluster(operation) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def parse_node_id(name: str, what: str) -> int:
    """A resource name as Java's Integer.parseInt reads it; INVALID_REQUEST "<what> must be an
    integer, but it is: <name>" otherwise."""
    try:
        return parse_int(name)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"{what} must be an integer, but it is: {name}") from None


def resource_label(resource_type: int, name: str) -> str:
    """Kafka's ConfigResource.toString, which some of its error messages embed."""
    return f"ConfigResource(type={RESOURCE_TYPE_NAMES.get(resource_type, 'UNKNOWN')}, name='{name}')"


def error_message(error: KcliError) -> str | None:
    """The message an answer carries: none when it only restates the code's generic message."""
    text = str(error)
    return None if not text or text == error.error_code.message else text


def current_loggers() -> dict[str, str]:
    """Every logger of this process with its effective level, in log4j's names; ``root`` first."""
    levels = {ROOT_LOGGER: level_name(logging.getLogger().getEffectiveLevel())}
    for name, logger in sorted(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            levels[name] = level_name(logger.getEffectiveLevel())
    return levels


def level_name(level: int) -> str:
    """The log4j name of a Python level: the highest log4j level at or below it."""
    name = "TRACE"
    for candidate, value in LOG4J_LEVELS.items():
        if value <= level:
            name = candidate
    return name


def logger_exists(name: str) -> bool:
    return name == ROOT_LOGGER or isinstance(logging.root.manager.loggerDict.get(name), logging.Logger)
