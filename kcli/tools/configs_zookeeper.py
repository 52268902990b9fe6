"""``kcli configs --zookeeper HOST:PORT[/chroot]``: Kafka 2.8's ConfigCommand through ZooKeeper,
for topics and brokers.

The tool reads and writes the config znodes itself, through ``AdminZkClient``'s ZooKeeper-era
path; brokers follow ``/config/changes`` and apply the change. Both actions first print Kafka
2.8's two deprecation lines (``DEPRECATION``). Its lines:

- ``--describe``: per entity, ``Configs for topic 'T' are k=v,k2=v2`` (``Configs for brokers '0'
  are ...``, ``Configs for default brokers are ...``): the znode's overrides as stored (Kafka 2.8
  hides no value here: passwords are stored encrypted), in the order of the ``Properties`` Kafka
  reads them into (a Java 8 Hashtable). Without ``--entity-name`` every entity with a config
  znode (``/config/topics/*``, ``/config/brokers/*``), in ZooKeeper's order of the children. A
  topic or broker without a znode has no overrides: ``Configs for topic 'T' are `` (no error).
- ``--alter``: the znode becomes the current overrides, plus ``--add-config`` (or
  ``--add-config-file``), minus ``--delete-config`` (a name it does not hold: ``Invalid
  config(s): k``), written with a change notification, then ``Completed updating config for
  entity: topic 'T'.``. A topic must exist and its whole new set pass LogConfig.validate; a
  broker's values of known dynamic configs must parse. While a broker is registered, ZooKeeper
  may change only its replication throttles (``UPDATABLE_WHILE_BROKER_RUNNING``; the defaults
  only while no broker is registered): Kafka 2.8's "--bootstrap-server option must be specified"
  refusal. Before the brokers start, the configs a running broker could take are accepted, as
  Kafka's DynamicBrokerConfig.validateConfigs checks them (its update modes are kcli's catalog
  of Kafka 3.9's); password configs, which Kafka 2.8 stores encrypted with
  ``password.encoder.secret``, are not available yet.

Users, clients and ips (quotas, SCRAM credentials) are refused in one line before ZooKeeper is
reached. A failure is one ``Error: ...`` line on stderr, exit 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kcli.errors import KcliError

# Kafka 2.8's ConfigType.all: what --entity-type takes with --zookeeper.
ZK_SUPPORTED_TYPES = ("topics", "clients", "users", "brokers", "ips")
AVAILABLE_TYPES = ("topics", "brokers", "users")
DEPRECATION = (
    "Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.",
    "Use --bootstrap-server instead to specify a broker to connect to.",
)
# Kafka 2.8's ConfigCommand.BrokerConfigsUpdatableUsingZooKeeperWhileBrokerRunning.
UPDATABLE_WHILE_BROKER_RUNNING = frozenset(
    {"leader.replication.throttled.rate", "follower.replication.throttled.rate", "replica.alter.log.dirs.io.max.bytes.per.second"}
)
BOOTSTRAP_INFO = (
    "Broker configuration updates using ZooKeeper are supported for bootstrapping before brokers"
    " are started to enable encrypted password configs to be stored in ZooKeeper."
)
PASSWORD_ENCODER_PREFIX = "password.encoder."


def check_entity_type(entity_type: str) -> None:
    """Kafka 2.8's refusal of an entity type --zookeeper does not take."""
    from kcli.errors import UsageError

    if entity_type not in ZK_SUPPORTED_TYPES:
        raise UsageError(
            f"Invalid entity type {entity_type}, the entity type must be one of {','.join(ZK_SUPPORTED_TYPES)} with the --zookeeper argument"
        )


def run(out, connect: str, *, alter: bool, entity_type: str, entity_name: str | None,
        add_config: str | None, add_config_file: str | None, delete_config: list[str] | None) -> None:
    """Describe or alter one entity (``entity_name`` "" is the brokers' default, None every
    entity of the type) on ``connect``'s cluster."""
    if entity_type not in AVAILABLE_TYPES:
        raise KcliError(f"entity type '{entity_type}' is not available with --zookeeper yet (client quotas); available: {', '.join(AVAILABLE_TYPES)}")
    from kcli.metadata import zk_paths as zk
    from kcli.metadata.admin_zk_client import AdminZkClient
    from kcli.metadata.zk_client import KafkaZkClient
    from kcli.tools.topics_zookeeper import open_store

    for line in DEPRECATION:
        out.line(line)
    out.flush()
    name = zk.DEFAULT_ENTITY if entity_name == "" else entity_name
    store = open_store(connect)
    try:
        admin = AdminZkClient(KafkaZkClient(store))
        if entity_type == "users":
            _users(out, admin.zk_client, alter, entity_name, add_config, add_config_file, delete_config or [])
        elif alter:
            assert name is not None
            _alter(out, admin, entity_type, name, add_config, add_config_file, delete_config or [])
        else:
            _describe(out, admin, entity_type, name)
    finally:
        store.close()


def entity_text(entity_type: str, name: str) -> str:
    """Kafka 2.8's ConfigCommand.Entity.toString."""
    from kcli.metadata import zk_paths as zk

    type_name = "topic" if entity_type == "topics" else entity_type
    return f"default {type_name}" if name == zk.DEFAULT_ENTITY else f"{type_name} '{name}'"


def properties_order(configs: Mapping[str, str]) -> dict[str, str]:
    """``configs`` in the order Kafka 2.8 iterates the ``Properties`` it puts them into."""
    from kcli.java_compat import JavaHashtable

    return {key: configs[key] for key in JavaHashtable(configs).keys()}


def _users(out, zk_client, alter: bool, name: str | None, add_config, add_config_file, delete_config: list[str]) -> None:
    """SCRAM credentials in ``/config/users/<user>`` (``configs_users``)."""
    from kcli.tools import configs_users
    from kcli.tools.configs import read_configs_to_add

    if not alter:
        configs_users.describe_through_zookeeper(zk_client, out, name or None)
        return
    if not name:
        raise KcliError("kcli stores SCRAM credentials for named users only: --entity-default has none")
    additions = read_configs_to_add(add_config, add_config_file)
    deletions = [key.strip() for item in delete_config for key in item.split(",") if item]
    configs_users.checked_changes(additions, deletions, default_entity=False, through="zookeeper")
    configs_users.alter_through_zookeeper(zk_client, out, name, additions, deletions)


# -- describe ----------------------------------------------------------------------------------------


def _describe(out, admin, entity_type: str, name: str | None) -> None:
    zk_client = admin.zk_client
    names = [name] if name is not None else zk_client.entities_with_config(entity_type)
    for entity in names:
        configs = properties_order(zk_client.entity_configs(entity_type, entity))
        out.line(f"Configs for {entity_text(entity_type, entity)} are {','.join(f'{k}={v}' for k, v in configs.items())}")


# -- alter -------------------------------------------------------------------------------------------


def _alter(out, admin, entity_type: str, name: str, add_config, add_config_file, delete_config: list[str]) -> None:
    from kcli.errors import ErrorCode, KafkaError
    from kcli.java_compat import JavaHashtable
    from kcli.metadata import zk_paths as zk
    from kcli.tools.configs import read_configs_to_add
    from kcli.tools.topics_zookeeper import MESSAGE_FORMAT_WARNING_28

    additions = read_configs_to_add(add_config, add_config_file)
    if add_config_file is not None:
        # Kafka copies the file's Properties into its own: the file's order, then the copy's.
        additions = properties_order(properties_order(additions))
    else:
        additions = properties_order(additions)
    if "message.format.version" in additions:
        out.line(MESSAGE_FORMAT_WARNING_28.format(additions["message.format.version"]))
    deletions = [key.strip() for item in delete_config for key in item.split(",") if item]
    broker_id = None
    if entity_type == "brokers":
        broker_id = None if name == zk.DEFAULT_ENTITY else _parse_broker(name)
        additions = _checked_broker_additions(admin, broker_id, name, additions)
    # Kafka merges into the Properties it read the znode into; the znode is written in its order.
    merged = admin.zk_client.entity_configs(entity_type, name)
    current = JavaHashtable(merged)
    missing = [key for key in deletions if key not in merged]
    if missing:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid config(s): {','.join(missing)}")
    for key, value in additions.items():
        merged[key] = value
        current.put(key)
    for key in deletions:
        merged.pop(key, None)
        current.remove(key)
    written = {key: merged[key] for key in current.keys()}
    if entity_type == "topics":
        from kcli.tools.topics_zookeeper import validate_log_config

        admin.zk_change_topic_config(name, written, config_validator=validate_log_config)
    else:
        admin.zk_change_broker_config(broker_id, written, config_validator=validate_dynamic_broker_config)
    out.line(f"Completed updating config for entity: {entity_text(entity_type, name)}.")


def _parse_broker(name: str) -> int:
    """Kafka 2.8's AdminZkClient.parseBroker."""
    from kcli.java_compat import parse_int

    try:
        return parse_int(name)
    except ValueError:
        raise KcliError(f"Error parsing broker {name}. The broker's Entity Name must be a single integer value") from None


def scala_set(keys: Iterable[str]) -> str:
    """A Scala 2.13 immutable Set's ``toString`` (up to four elements keep their order)."""
    keys = list(keys)
    return f"{'Set' if len(keys) <= 4 else 'HashSet'}({', '.join(keys)})"


def _checked_broker_additions(admin, broker_id: int | None, name: str, additions: dict[str, str]) -> dict[str, str]:
    """Kafka 2.8's refusal of most broker configs while brokers run, then preProcessBrokerConfigs'
    checks: the additions without the password encoder's settings."""
    dynamic = [key for key in additions if key not in UPDATABLE_WHILE_BROKER_RUNNING]
    if not dynamic:
        return additions
    refusal = f"requirement failed: --bootstrap-server option must be specified to update broker configs {scala_set(dynamic)}"
    zk_client = admin.zk_client
    if broker_id is not None:
        if zk_client.broker_registration(broker_id) is not None:
            raise KcliError(f"{refusal} when broker {name} is running. {BOOTSTRAP_INFO}")
    elif zk_client.registered_brokers():
        raise KcliError(f"{refusal} for default cluster if any broker is running. {BOOTSTRAP_INFO}")
    kept = {key: value for key, value in additions.items() if not key.startswith(PASSWORD_ENCODER_PREFIX)}
    validate_broker_configs_for_bootstrap(kept, per_broker=broker_id is not None)
    return kept


def validate_broker_configs_for_bootstrap(configs: Mapping[str, str], *, per_broker: bool) -> None:
    """Kafka 2.8's DynamicBrokerConfig.validateConfigs, with kcli's catalog of update modes."""
    from kcli.broker.config.broker_config import (
        CLUSTER_LEVEL_LISTENER_CONFIGS,
        DYNAMIC_SECURITY_CONFIGS,
        LISTENER_CONFIG_PREFIX,
        NON_DYNAMIC_CONFIGS,
        PER_BROKER_CONFIGS,
        broker_config_key,
    )
    from kcli.config import ConfigType

    def refuse(keys: list[str], message: str) -> None:
        if keys:
            raise KcliError(f"{message}: {scala_set(keys)}")

    refuse([k for k in configs if k in NON_DYNAMIC_CONFIGS], "Cannot update these configs dynamically")
    refuse([k for k in configs if k in DYNAMIC_SECURITY_CONFIGS],
           "These security configs can be dynamically updated only per-listener using the listener prefix")
    validate_dynamic_broker_config(configs)
    if not per_broker:
        def per_broker_key(key: str) -> bool:
            match = LISTENER_CONFIG_PREFIX.fullmatch(key)
            return key in PER_BROKER_CONFIGS or (match is not None and match.group(1) not in CLUSTER_LEVEL_LISTENER_CONFIGS)

        refuse([k for k in configs if per_broker_key(k)], "Cannot update these configs at default cluster level, broker id must be specified")
    passwords = [k for k in configs if (key := broker_config_key(k)) is not None and key.type is ConfigType.PASSWORD]
    if passwords:
        raise KcliError(
            f"password configs ({', '.join(passwords)}) are not available with --zookeeper yet: Kafka stores them encrypted with password.encoder.secret"
        )


def validate_dynamic_broker_config(configs: Mapping[str, str]) -> None:
    """Kafka 2.8's DynamicConfig.Broker.validate: the values of the dynamic broker configs (and
    the replication throttles) must parse; any other name is kept as it is."""
    from kcli.broker.config.broker_config import BROKER_QUOTA_CONFIG_DEF, UpdateMode, broker_config_key, update_mode

    for key, value in configs.items():
        definition = broker_config_key(key)
        if definition is not None and (key in BROKER_QUOTA_CONFIG_DEF or update_mode(definition.name) is not UpdateMode.READ_ONLY):
            definition.parse(value)
