"""AlterConfigs: v0-2

Behaviour: replaces the whole dynamic config set of each resource with the one given (keys left
out return to their defaults), as a ZooKeeper-mode Kafka 3.9 broker does. A resource named twice
answers INVALID_REQUEST for both; a key named twice or a null value answers INVALID_REQUEST.
TOPIC (2): the name may not be empty (INVALID_REQUEST), the topic must exist
(UNKNOWN_TOPIC_OR_PARTITION), and the new set must pass the topic config rules (INVALID_CONFIG;
a value that does not parse is reported as "Invalid config value for resource
ConfigResource(type=TOPIC, name='t'): ..."). The new configs reach the topic's hosted logs at
once. BROKER (4): the name "" sets the cluster-wide defaults, this broker's id its own configs;
another id, a read-only key, a per-broker key at cluster level or a value that does not parse
answer INVALID_REQUEST, Kafka's answer for broker configs. After a broker change the broker
reloads its dynamic configuration (new topic defaults for every hosted log). CLIENT_METRICS
answers INVALID_REQUEST (not supported here), any other type INVALID_REQUEST "Unknown resource
type N". With validate_only everything is checked and nothing is changed.

With an authorizer a topic's configs need ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED),
the other resources' on the cluster (CLUSTER_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v1 is v0 with throttling on quota violation; v2 is flexible.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Iterable, Mapping

from kcli.broker.config import config_describer
from kcli.broker.handlers.describe_configs import (
    BROKER, CLIENT_METRICS, TOPIC, config_authorization_error, error_message, parse_node_id, resource_label,
)
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation

API_KEY = ApiKey.ALTER_CONFIGS
VERSIONS = (0, 2)

# Messages of Kafka's ConfigException (a value that does not parse or validate, tiered-storage
# refusals): the ZooKeeper-mode admin path prefixes these with the resource, and passes the
# others (InvalidConfigurationException) through as they are.
_CONFIG_EXCEPTION_STARTS = (
    "Invalid value ",
    "Tiered Storage functionality is disabled in the broker.",
    "Remote log storage is unsupported for the compacted topics",
)

log = logging.getLogger(__name__)


async def handle(ctx, request):
    return await answer_each(ctx, request, "alter configs", _alter)


async def answer_each(ctx, request, what: str, alter) -> dict:
    """Apply ``alter(broker, resource, validate_only)`` to each resource and answer each on its own:
    one resource's failure (logged, as Kafka logs it) does not stop the others. With an
    authorizer each needs ALTER_CONFIGS (``config_authorization_error``)."""
    broker = ctx.broker
    duplicated = duplicated_resources(request.resources)
    responses = []
    for resource in request.resources:
        label = resource_label(resource.resource_type, resource.resource_name)
        try:
            if (resource.resource_type, resource.resource_name) in duplicated:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            refused = config_authorization_error(ctx, AclOperation.ALTER_CONFIGS, resource.resource_type, resource.resource_name)
            if refused is not None:
                responses.append(answer(resource, KafkaError(refused, refused.message)))
                continue
            await alter(broker, resource, request.validate_only)
        except KcliError as e:
            log.info("Error processing %s request for resource %s: %s", what, label, e)
            responses.append(answer(resource, e))
        except Exception:
            log.exception("Error processing %s request for resource %s", what, label)
            responses.append(answer(resource, KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR)))
        else:
            responses.append(answer(resource))
    return {"responses": responses}


async def _alter(broker, resource, validate_only: bool) -> None:
    check_config_names(config.name for config in resource.configs)
    configs = {config.name: config.value for config in resource.configs}
    check_no_nulls(name for name, value in configs.items() if value is None)
    name = resource.resource_name
    if resource.resource_type == BROKER:
        broker_id = check_broker_name(broker, name)
        config_describer.validate_broker_configs(configs, broker_id is not None, broker.effective_config())
        if not validate_only:
            await write_broker_configs(broker, broker_id, configs)
    elif resource.resource_type == TOPIC:
        existing = existing_topic_configs(broker, name)
        try:
            config_describer.validate_topic_configs(configs, broker.effective_config(), existing=existing)
        except KafkaError as e:
            raise topic_config_error(name, e) from None
        if not validate_only:
            await write_topic_configs(broker, name, configs)
    elif resource.resource_type == CLIENT_METRICS:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "AlterConfigs is only supported for topics and brokers, but resource type is CLIENT_METRICS")
    else:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}")


# -- shared with IncrementalAlterConfigs ------------------------------------------------------------


def duplicated_resources(resources) -> set[tuple[int, str]]:
    counts = collections.Counter((r.resource_type, r.resource_name) for r in resources)
    return {key for key, count in counts.items() if count > 1}


def check_config_names(names: Iterable[str]) -> None:
    counts = collections.Counter(names)
    if any(count > 1 for count in counts.values()):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")


def check_no_nulls(names: Iterable[str]) -> None:
    nulls = list(names)
    if nulls:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))


def check_broker_name(broker, name: str) -> int | None:
    """The broker id a BROKER resource names (None: the cluster-wide defaults)."""
    if not name:
        return None
    broker_id = parse_node_id(name, "Node id")
    if broker_id != broker.id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker.id}, but received {name}")
    return broker_id


def existing_topic_configs(broker, name: str) -> dict[str, str]:
    """The current overrides of the topic a TOPIC resource names, which must exist."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    info = broker.metadata.topic(name)
    if info is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    return dict(info.configs)


def topic_config_error(name: str, error: KafkaError) -> KafkaError:
    message = str(error)
    if error.error_code == ErrorCode.INVALID_CONFIG and message.startswith(_CONFIG_EXCEPTION_STARTS):
        message = f"Invalid config value for resource {resource_label(TOPIC, name)}: {message}"
    return KafkaError(error.error_code, message)


async def write_topic_configs(broker, name: str, configs: Mapping[str, str]) -> None:
    """Store a topic's new overrides; the metadata change reconfigures its hosted logs."""
    log.info("Updating topic %s with new configuration : %s", name, ",".join(f"{k} -> {v}" for k, v in configs.items()))
    await broker.admin_manager.set_topic_configs(name, dict(configs))


async def write_broker_configs(broker, broker_id: int | None, configs: Mapping[str, str]) -> None:
    """Store a broker resource's new dynamic configs; the metadata cache's refresh applies them to
    this broker (``Broker._on_broker_config_change``), as a change written elsewhere is applied."""
    if broker_id is None:
        log.info("Updating brokers with new configuration : %s", ",".join(sorted(configs)))
    else:
        log.info("Updating broker %d with new configuration : %s", broker_id, ",".join(sorted(configs)))
    await broker.admin_manager.set_broker_configs(broker_id, dict(configs))


def answer(resource, error: KcliError | None = None) -> dict:
    return {
        "error_code": ErrorCode.NONE if error is None else error.error_code,
        "error_message": None if error is None else error_message(error),
        "resource_type": resource.resource_type,
        "resource_name": resource.resource_name,
    }
