"""IncrementalAlterConfigs: v0-1

Behaviour: applies operations to each resource's current dynamic configs: SET (0) a value,
DELETE (1) a key (back to its default), APPEND (2) / SUBTRACT (3) comma-separated items of a
LIST config (INVALID_CONFIG for other types), then checks the result as AlterConfigs does, as a
ZooKeeper-mode Kafka 3.9 broker does. A resource named twice answers INVALID_REQUEST for both;
a key named twice, a null value for anything but DELETE, or an unknown operation answers
INVALID_REQUEST. TOPIC (2) and BROKER (4) follow AlterConfigs' rules and messages (missing topic
UNKNOWN_TOPIC_OR_PARTITION, topic rules INVALID_CONFIG, broker rules INVALID_REQUEST); a topic's
new configs reach its hosted logs at once, and a broker change is applied to this broker.
BROKER_LOGGER (8), named by this broker's id, sets (SET, a log4j level name: TRACE, DEBUG, INFO,
WARN, ERROR, FATAL) or unsets (DELETE) the level of one of this broker's loggers: an unknown
logger or level answers INVALID_CONFIG; unsetting ``root``, APPEND and SUBTRACT answer
INVALID_REQUEST. CLIENT_METRICS answers INVALID_REQUEST (not supported here), any other type
INVALID_REQUEST "Unknown resource type N". With validate_only nothing is changed.

With an authorizer a topic's configs need ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED),
the other resources' on the cluster (CLUSTER_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v1 is flexible.
"""

from __future__ import annotations

import logging

from kcli.broker.config import config_describer
from kcli.broker.config.config_describer import AlterOp, Op
from kcli.broker.handlers.alter_configs import (
    answer_each,
    check_broker_name,
    check_config_names,
    check_no_nulls,
    existing_topic_configs,
    topic_config_error,
    write_broker_configs,
    write_topic_configs,
)
from kcli.broker.log_levels import LOG4J_LEVELS
from kcli.broker.handlers.describe_configs import (
    BROKER,
    BROKER_LOGGER,
    CLIENT_METRICS,
    ROOT_LOGGER,
    TOPIC,
    logger_exists,
    parse_node_id,
)
from kcli.errors import ErrorCode, KafkaError
from kcli.protocol.api_keys import ApiKey

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS
VERSIONS = (0, 1)

log = logging.getLogger(__name__)


async def handle(ctx, request):
    return await answer_each(ctx, request, "incremental alter configs", _alter)


async def _alter(broker, resource, validate_only: bool) -> None:
    ops: list[Op] = [(config.name, config.config_operation, config.value) for config in resource.configs]
    check_config_names(name for name, _, _ in ops)
    check_no_nulls(name for name, op, value in ops if op != AlterOp.DELETE and value is None)
    name = resource.resource_name
    if resource.resource_type == BROKER_LOGGER:
        _alter_loggers(broker, name, ops, validate_only)
    elif resource.resource_type == BROKER:
        broker_id = check_broker_name(broker, name)
        current = broker.metadata.broker_configs(broker_id)
        updated = config_describer.apply_incremental(current, ops, "broker", broker=broker.effective_config(), per_broker=broker_id is not None)
        if not validate_only:
            await write_broker_configs(broker, broker_id, updated)
    elif resource.resource_type == TOPIC:
        current = existing_topic_configs(broker, name)
        try:
            updated = config_describer.apply_incremental(current, ops, "topic", broker=broker.effective_config())
        except KafkaError as e:
            raise topic_config_error(name, e) from None
        if not validate_only:
            await write_topic_configs(broker, name, updated)
    elif resource.resource_type == CLIENT_METRICS:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "AlterConfigs is only supported for topics and brokers, but resource type is CLIENT_METRICS")
    else:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}")


# -- BROKER_LOGGER ----------------------------------------------------------------------------------


def _alter_loggers(broker, name: str, ops: list[Op], validate_only: bool) -> None:
    if parse_node_id(name, "Node id") != broker.id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected node id. Expected {broker.id}, but received {name}")
    for logger, op, value in ops:
        _check_logger_op(logger, op, value)
    if validate_only:
        return
    for logger, op, value in ops:
        target = logging.getLogger() if logger == ROOT_LOGGER else logging.getLogger(logger)
        if op == AlterOp.SET:
            target.setLevel(LOG4J_LEVELS[value])
            log.warning("Updated the log level of %s to %s", logger, value)
        else:
            target.setLevel(logging.NOTSET)
            log.warning("Unset the log level of %s", logger)


def _check_logger_op(logger: str, op: int, value: str | None) -> None:
    if op in (AlterOp.SET, AlterOp.DELETE) and not logger_exists(logger):
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Logger {logger} does not exist!")
    if op == AlterOp.SET and value not in LOG4J_LEVELS:
        raise KafkaError(
            ErrorCode.INVALID_CONFIG,
            f"Cannot set the log level of {logger} to {value} as it is not a supported log level. "
            f"Valid log levels are {', '.join(sorted(LOG4J_LEVELS))}",
        )
    if op == AlterOp.DELETE and logger == ROOT_LOGGER:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Removing the log level of the {ROOT_LOGGER} logger is not allowed")
    if op in (AlterOp.APPEND, AlterOp.SUBTRACT):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"{AlterOp(op).name} operation is not allowed for the BROKER_LOGGER resource")
    if op not in (AlterOp.SET, AlterOp.DELETE, AlterOp.APPEND, AlterOp.SUBTRACT):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {op} is not allowed for the BROKER_LOGGER resource")
