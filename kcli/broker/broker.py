"""One broker process: configuration, storage, metadata, the network, and their life cycle.

Start-up: lock every ``log.dirs`` entry, open the metadata tree (embedded, or ZooKeeper with
``zookeeper.connect``), check or write ``meta.properties`` (broker id and cluster id, as a
ZooKeeper-era broker writes it), load the logs (recovering them after a crash), bind the
listeners, register under ``/brokers/ids``, run for controller, host every partition this broker
leads (in cluster mode: as the controller's LeaderAndIsr requests say, when they come), then accept
requests. Shutdown (SIGTERM/SIGINT): in cluster mode ask the controller to move this broker's
leadership away first (ControlledShutdown), then stop accepting, let in-flight requests finish,
flush every log, write the checkpoints and the clean-shutdown marker.

Periodic work runs off the event loop in a thread: flushing (``log.flush.scheduler.interval.ms``),
retention (``log.retention.check.interval.ms``) and checkpoints
(``log.flush.offset.checkpoint.interval.ms``, ``log.flush.start.offset.checkpoint.interval.ms``).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import NamedTuple

from kcli.broker.config import config_describer
from kcli.broker.replica.fetch_sessions import FetchSessionCache
from kcli.broker.groups.coordinator import GroupCoordinator
from kcli.broker.groups.hosting import start_group_coordinator
from kcli.broker.handlers import load_registry
from kcli.metadata import zk_paths
from kcli.broker.controller.channel_manager import ControllerChannelManager
from kcli.broker.controller.kafka_controller import KafkaController
from kcli.broker.metadata.metadata_cache import MetadataCache
from kcli.broker.metadata.metadata_thread import MetadataThread
from kcli.broker.metadata.zk_admin_manager import ZkAdminManager
from kcli.metadata.acl_store import AclStore
from kcli.metadata.admin_zk_client import AdminZkClient
from kcli.metadata.topics import TopicChange, TopicInfo, TopicPartitionState
from kcli.metadata.zk_client import KafkaZkClient
from kcli.metadata.embedded import EmbeddedStore
from kcli.metadata.store import MetadataStore, MetadataStoreError
from kcli.metadata.zookeeper import ZooKeeperStore
from kcli.broker.producer_ids import ProducerIdManager
from kcli.broker.replica.replica_manager import ReplicaManager
from kcli.broker.replica.alter_isr_manager import AlterIsrManager
from kcli.broker.replica.replica_fetcher import FetcherConfig
from kcli.broker.replica.replica_fetcher_manager import ReplicaFetcherManager
from kcli.broker.quotas.replication_quota_manager import ReplicationQuotaManager
from kcli.broker.network.server import Server, ServerSettings
from kcli.broker.transactions.coordinator import TransactionCoordinator
from kcli.broker.transactions.hosting import start_transaction_coordinator
from kcli.broker.transactions.verification import AddPartitionsToTxnManager, start_add_partitions_to_txn_manager
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.broker.network.listeners import inter_broker_security, listener_security
from kcli.broker.security.acl_change_listener import AclChangeListener
from kcli.broker.security.authorizer import AclAuthorizer
from kcli.broker.security.credential_cache import CredentialCache
from kcli.storage import descriptors
from kcli.storage.checkpoints import META_PROPERTIES, read_meta_properties, write_meta_properties
from kcli.storage.log_cleaner import CleanerConfig
from kcli.storage.log_config import LogConfig
from kcli.storage.log_manager import LogManager

log = logging.getLogger("kcli.broker")


class BrokerAddress(NamedTuple):
    id: int
    host: str
    port: int
    rack: str | None


class Broker:
    def __init__(self, config) -> None:
        self.config = config
        self.id: int = config.broker_id
        self.cluster_id: str | None = None
        self.cluster_mode = bool(config.get("zookeeper.connect"))
        self.registry = load_registry(cluster_mode=self.cluster_mode)
        self.log_manager: LogManager | None = None
        self.zk_client: KafkaZkClient | None = None
        self.metadata: MetadataCache | None = None
        self.admin_manager: ZkAdminManager | None = None
        self.controller: KafkaController | None = None
        # In cluster mode (ZooKeeper) the controller drives hosting through LeaderAndIsr and StopReplica.
        self.controller_channel: ControllerChannelManager | None = None
        self.metadata_thread: MetadataThread | None = None
        self.replica_manager: ReplicaManager | None = None
        self.producer_ids: ProducerIdManager | None = None
        self.group_coordinator: GroupCoordinator | None = None
        self.transaction_coordinator: TransactionCoordinator | None = None
        self.add_partitions_to_txn_manager: AddPartitionsToTxnManager | None = None
        self.credential_cache: CredentialCache | None = None
        # authorizer.class.name's authorizer (None: every principal may do everything).
        self.authorizer = AclAuthorizer.from_config(config.get("authorizer.class.name"), config.originals)
        self.acl_change_listener: AclChangeListener | None = None
        # How this broker's own channels reach the others' inter-broker listener (None: PLAINTEXT).
        self.inter_broker_security = inter_broker_security(config)
        self.fetch_sessions = FetchSessionCache(config.get("max.incremental.fetch.session.cache.slots"))
        self.server = Server(self, self.registry, settings=ServerSettings.from_config(config))
        self.endpoints: list[tuple[str, str, int]] = []
        self._default_log_config: LogConfig = config.log_config()
        self._tasks: list[asyncio.Task] = []
        self._logs_loaded = False
        self._registration: tuple = ((), None)
        self._unclean_default_seen = False
        # Kafka's broker epoch: the czxid of this broker's registration znode (KIP-380); the
        # controller's requests carry it, and one of an older registration is refused.
        self.broker_epoch = -1
        self._stopped = asyncio.Event()

    @property
    def log_dirs(self) -> list[Path]:
        return [Path(d) for d in self.config.log_dirs]

    # -- start -------------------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # The log dirs are locked before anything in them is read or written, so a second broker
        # on the same dirs stops here without touching the metadata.
        self.log_manager = LogManager(
            self.log_dirs,
            self._default_log_config,
            self.topic_log_config,
            producer_id_expiration_ms=self.config.get("producer.id.expiration.ms"),
            load=False,
        )
        self.metadata_thread = thread = MetadataThread(loop)
        store = await thread.call(self._open_metadata_store)
        self.zk_client = KafkaZkClient(store)
        await thread.call(self.zk_client.create_top_level_paths)
        self.id = await thread.call(self._resolve_broker_id)
        self.metadata = MetadataCache(self.zk_client, thread, fed_by_controller=self.cluster_mode)
        self.admin_manager = ZkAdminManager(
            AdminZkClient(
                self.zk_client,
                default_num_partitions=self.config.get("num.partitions"),
                default_replication_factor=self.config.get("default.replication.factor"),
                new_partitions_check=self._check_open_file_budget,
            ),
            self.metadata,
            mark_deletions=self.cluster_mode,
        )
        if self.cluster_mode:
            self.controller_channel = ControllerChannelManager(
                loop, self.id, timeout_ms=self.config.get("controller.socket.timeout.ms"), security=self.inter_broker_security
            )
        self.controller = KafkaController(
            self.zk_client, self.id, thread, channel=self.controller_channel, inter_broker_listener=self.inter_broker_listener(),
            delete_topic_enable=self.config.get("delete.topic.enable"),
            unclean_leader_election_enable=self._unclean_leader_election_default,
        )
        await thread.call(self.metadata.start)
        self._unclean_default_seen = self._unclean_leader_election_default()
        self.metadata.on_broker_config_change(self._on_broker_config_change)
        self.cluster_id = await thread.call(self.zk_client.get_or_create_cluster_id)
        await thread.call(self.zk_client.check_broker_id_free, self.id)
        self._check_meta_properties()
        self._check_open_file_limit()
        self._default_log_config = self.log_manager.default_config = self.effective_config().log_config()
        await loop.run_in_executor(None, self.log_manager.load_logs)
        self._logs_loaded = True
        self.log_manager.start_cleaner(CleanerConfig.from_broker_config(self.config.get))
        self.replica_manager = ReplicaManager(
            self.id, self.log_manager, self.metadata, replica_lag_time_max_ms=self.config.get("replica.lag.time.max.ms")
        )
        self.leader_quota = ReplicationQuotaManager("leader", self.id)
        self.follower_quota = ReplicationQuotaManager("follower", self.id)
        self._update_replication_quotas(self.effective_config())
        self.replica_manager.leader_quota = self.leader_quota
        if self.cluster_mode:
            self.replica_manager.replica_fetcher_manager = ReplicaFetcherManager(
                self.id, self.replica_manager, FetcherConfig.from_broker_config(self.config.get), self.inter_broker_address,
                self.inter_broker_security, self.follower_quota,
            )
            self.replica_manager.alter_isr_manager = AlterIsrManager(
                self.id, lambda: self.broker_epoch, self.metadata.controller_id, self.inter_broker_address,
                self.replica_manager.try_complete_delayed_requests, request_timeout_ms=self.config.get("controller.socket.timeout.ms"),
                security=self.inter_broker_security,
            )
            self.replica_manager.alter_isr_manager.start()
        self.producer_ids = ProducerIdManager(store, self.id, thread)
        self.producer_ids.prefetch()
        self.credential_cache = CredentialCache(store, thread)
        await thread.call(self.credential_cache.start)
        if self.authorizer is not None:
            self.acl_change_listener = AclChangeListener(AclStore(store), thread, self.authorizer)
            await thread.call(self.acl_change_listener.start)
        # As Kafka's broker: bind the listeners (connections wait in the backlog), register, run
        # for controller (a controller counts the brokers registered), take up the partitions
        # this broker leads, and only then accept requests.
        for listener_name, host, port in self.config.listeners:
            security = listener_security(self.config, listener_name)
            self.endpoints.append((listener_name, *await self.server.listen(host, port, listener_name, accept=False, security=security)))
        endpoints = [zk_paths.Endpoint(name, host, port, self.config.security_protocol(name)) for name, host, port in self.advertised_endpoints()]
        self._registration = (endpoints, self.config.get("broker.rack"))
        await thread.call(self._register)
        store.on_new_session(lambda: thread.submit(self._on_new_session))
        await thread.call(self.controller.startup)
        await self.metadata.refresh_cluster_async()
        if not self.cluster_mode:
            for topic in self.metadata.topics().values():
                self._host_topic(topic)
        self.metadata.on_topic_change(self._on_topic_change)
        self.group_coordinator = start_group_coordinator(self)
        self.transaction_coordinator = start_transaction_coordinator(self)
        self.add_partitions_to_txn_manager = start_add_partitions_to_txn_manager(self)
        for _, bound_host, bound_port in self.endpoints:
            log.info("Awaiting socket connections on %s:%d.", bound_host, bound_port)
        self.server.start_accepting()
        self._schedule_periodic_work()
        log.info("[KafkaServer id=%d] started", self.id)

    def _open_metadata_store(self) -> MetadataStore:
        """ZooKeeper when ``zookeeper.connect`` is set, else the embedded tree in the first log dir."""
        connect = self.config.get("zookeeper.connect")
        if not connect:
            return EmbeddedStore(self.log_dirs[0])
        store = ZooKeeperStore(
            connect,
            session_timeout_ms=self.config.get("zookeeper.session.timeout.ms"),
            connection_timeout_ms=self.config.get("zookeeper.connection.timeout.ms"),
        )
        log.info("Connecting to zookeeper on %s", connect)
        try:
            return store.start()
        except MetadataStoreError as e:
            raise KcliError(str(e)) from None

    def _resolve_broker_id(self) -> int:
        """Kafka's getOrGenerateBrokerId, on the metadata thread: ``broker.id`` when configured;
        else the id ``meta.properties`` holds; else, in ZooKeeper mode with
        ``broker.id.generation.enable``, ``reserved.broker.max.id`` plus the next number of
        ``/brokers/seqid`` (the first generated id is 1001); a single embedded broker is 0."""
        configured = self.config.get("broker.id")
        if configured >= 0:
            return configured
        for log_dir in self.log_dirs:
            try:
                stored = read_meta_properties(log_dir / META_PROPERTIES).get("broker.id")
            except FileNotFoundError:
                continue
            if stored is not None and stored.lstrip("-").isdigit():
                return int(stored)
        if not self.config.get("zookeeper.connect"):
            return self.config.broker_id
        if not self.config.get("broker.id.generation.enable"):
            raise KcliError("broker.id is not set and broker.id.generation.enable is false: set broker.id (0 to reserved.broker.max.id)")
        broker_id = self.zk_client.generate_broker_sequence_id() + self.config.get("reserved.broker.max.id")
        log.info("Generated broker.id %d from %s", broker_id, zk_paths.BROKER_SEQUENCE_ID)
        return broker_id

    def _register(self) -> None:
        """``/brokers/ids/<id>``, on the metadata thread."""
        endpoints, rack = self._registration
        self.zk_client.register_broker(self.id, endpoints, rack=rack)
        stat = self.zk_client.store.exists(zk_paths.broker_id_path(self.id))
        if stat is not None:
            self.broker_epoch = stat.czxid
        log.info("Registered broker %d at path %s with addresses: %s", self.id, zk_paths.broker_id_path(self.id),
                 ",".join(f"{e.listener_name}://{e.host}:{e.port}" for e in endpoints))

    def _on_new_session(self) -> None:
        """After a ZooKeeper session expired: register again and run for controller again, as
        Kafka's broker does in its session handlers (the old session's ephemerals are gone)."""
        self.controller.resign()
        try:
            self._register()
        except KcliError as e:
            log.error("Could not register again after a new ZooKeeper session: %s", e)
        self.controller.try_elect()

    def advertised_endpoints(self) -> list[tuple[str, str, int]]:
        """(listener name, host, port) clients should use: advertised.listeners, ports as bound."""
        advertised = self.config.advertised_listeners or self.config.listeners
        bound = {name: (host, port) for name, host, port in self.endpoints}
        result = []
        for name, host, port in advertised:
            bound_host, bound_port = bound.get(name, (host, port))
            if not host:
                host = bound_host if bound_host not in ("0.0.0.0", "::") else socket.getfqdn()  # Kafka's canonical host name
            result.append((name, host, port or bound_port))
        return result

    def _check_meta_properties(self) -> None:
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            path = log_dir / META_PROPERTIES
            try:
                props = read_meta_properties(path)
            except FileNotFoundError:
                write_meta_properties(path, {"version": "0", "broker.id": str(self.id), "cluster.id": self.cluster_id})
                continue
            if props.get("cluster.id") not in (None, self.cluster_id):
                raise KcliError(
                    f"The Cluster ID {self.cluster_id} doesn't match stored clusterId {props.get('cluster.id')} in {path}. "
                    "The broker is trying to join the wrong cluster. Configured zookeeper.connect may be wrong."
                )
            if props.get("broker.id") not in (None, str(self.id)):
                raise KcliError(
                    f"Configured broker.id {self.id} doesn't match stored broker.id {props.get('broker.id')} in {path}. "
                    "If you moved your data, make sure your configured broker.id matches. If you intend to create a new broker, "
                    "you should remove all data in your data directories (log.dirs)."
                )

    def inter_broker_listener(self) -> str:
        """Kafka's inter.broker.listener.name, else the listener of security.inter.broker.protocol."""
        return self.config.inter_broker_listener_name

    def inter_broker_address(self, broker_id: int) -> tuple[str, int] | None:
        """Where a live broker listens for other brokers: its endpoint of the inter-broker
        listener (its first one when it registered none of that name); None when not alive."""
        registration = self.metadata.alive_brokers().get(broker_id)
        if registration is None or not registration.endpoints:
            return None
        endpoint = _endpoint_on(registration.endpoints, self.inter_broker_listener()) or registration.endpoints[0]
        return endpoint.host, endpoint.port

    def live_brokers(self, listener_name: str | None = None) -> list[BrokerAddress]:
        """Every registered broker at its endpoint on ``listener_name`` (a broker without that
        listener is left out, as Kafka's MetadataCache leaves it out of a Metadata answer), or,
        with no name, on the inter-broker listener, else at its first endpoint."""
        result = []
        for broker_id, registration in self.metadata.alive_brokers().items():
            endpoint = _endpoint_on(registration.endpoints, listener_name or self.inter_broker_listener())
            if endpoint is None and listener_name is None and registration.endpoints:
                endpoint = registration.endpoints[0]
            if endpoint is not None:
                result.append(BrokerAddress(broker_id, endpoint.host, endpoint.port, registration.rack))
        return result

    def controller_id(self) -> int:
        controller = self.metadata.controller_id()
        return -1 if controller is None else controller

    async def auto_create_topic(self, name: str) -> TopicInfo:
        topic = await self.admin_manager.create_topic(name, config_validator=self.validate_topic_configs)
        log.info("Auto-created topic %s with %d partition(s)", name, len(topic.partitions))
        return topic

    def validate_topic_configs(self, configs) -> None:
        config_describer.validate_topic_configs(dict(configs), self.effective_config())

    def effective_config(self):
        """The static config with the dynamic layers (cluster defaults, then this broker's) applied."""
        return self.config.with_dynamic(self.metadata.broker_configs(None), self.metadata.broker_configs(self.id))

    def describe_topic_configs(self, name: str, overrides, keys=None, *, include_synonyms: bool = False, include_documentation: bool = False):
        return config_describer.describe_topic_configs(
            overrides,
            self.config,
            keys,
            include_synonyms,
            include_documentation,
            dynamic=self.metadata.broker_configs(self.id),
            dynamic_default=self.metadata.broker_configs(None),
        )

    def _unclean_leader_election_default(self) -> bool:
        """``unclean.leader.election.enable`` with the dynamic layers applied: what the controller
        uses for a topic without its own override (Kafka's controller reads its KafkaConfig)."""
        return bool(self.effective_config().get("unclean.leader.election.enable"))

    def _on_broker_config_change(self) -> None:
        """The brokers' dynamic configs changed in the tree (written by any broker or tool): new
        topic defaults for the hosted logs, new replication throttle rates, and, when the default
        ``unclean.leader.election.enable`` went from false to true, the controller (if this broker
        is it) elects the offline partitions again (Kafka 2.8's DynamicLogConfig.reconfigure)."""
        if self.replica_manager is not None:
            self.reload_dynamic_config()
        enabled = self._unclean_leader_election_default()
        was, self._unclean_default_seen = self._unclean_default_seen, enabled
        if enabled and not was and self.controller is not None:
            self.controller.enable_default_unclean_leader_election()

    def reload_dynamic_config(self) -> None:
        """After a broker config change: new topic defaults for every hosted log, led or
        followed, and the replication throttles' rates."""
        config = self.effective_config()
        self._default_log_config = config.log_config()
        self.log_manager.default_config = self._default_log_config
        for topic in self.replica_manager.hosted_topics():
            self.replica_manager.update_config(topic)
        self._update_replication_quotas(config)

    def _update_replication_quotas(self, config) -> None:
        """``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate``
        from ``config``, the dynamic layers applied (Kafka's DynamicReplicationConfig)."""
        windows = {"samples": config.get("replication.quota.window.num"), "window_seconds": config.get("replication.quota.window.size.seconds")}
        self.leader_quota.update_quota(config.get("leader.replication.throttled.rate"), **windows)
        self.follower_quota.update_quota(config.get("follower.replication.throttled.rate"), **windows)

    def topic_log_config(self, topic: str) -> LogConfig | None:
        """The log config of ``topic``: the broker's defaults overridden by the topic's configs."""
        if self.metadata is None:
            return None
        info = self.metadata.topic(topic)
        if info is None or not info.configs:
            return self._default_log_config
        return LogConfig.from_properties(info.configs, self._default_log_config)

    # -- open files --------------------------------------------------------------------------------

    def _check_open_file_limit(self) -> None:
        """Refuse to start, in one line, when the logs this broker holds (on disk, or assigned to
        it and still to be created) cannot all be opened under the open-file limit."""
        on_disk = self.log_manager.logs_on_disk()
        to_create = sum(
            1
            for topic in self.metadata.topics().values()
            for index, state in topic.partitions.items()
            if self.id in state.replicas and f"{topic.name}-{index}" not in on_disk.partitions
        )
        needed = on_disk.descriptors + to_create * descriptors.DESCRIPTORS_PER_NEW_PARTITION + descriptors.PROCESS_HEADROOM
        limit = descriptors.open_file_limit()
        if needed > limit:
            raise KcliError(
                f"cannot open the logs: {len(on_disk.partitions) + to_create} partitions with {on_disk.segments + to_create} "
                f"segments need about {needed} open files, but the open-file limit (RLIMIT_NOFILE) is {limit}; "
                f"raise it (ulimit -n {needed}) and start again"
            )

    def _check_open_file_budget(self, replicas) -> None:
        """POLICY_VIOLATION for new partitions whose logs would not leave enough descriptors free
        under the open-file limit (``storage/descriptors.py``); nothing is created then."""
        new = sum(1 for assigned in replicas.values() if self.id in assigned)
        if not new or self.log_manager is None:
            return
        limit = descriptors.open_file_limit()
        reserve = descriptors.connection_reserve(limit, self.config.get("max.connections"))
        held = self.log_manager.descriptors_needed()
        needed = new * descriptors.DESCRIPTORS_PER_NEW_PARTITION
        if held + needed + reserve > limit:
            raise KafkaError(
                ErrorCode.POLICY_VIOLATION,
                f"Creating {new} partition(s) on broker {self.id} needs {needed} more open files: its logs hold {held} "
                f"and {reserve} are kept for connections, under an open-file limit (RLIMIT_NOFILE) of {limit}.",
            )

    # -- topics ------------------------------------------------------------------------------------

    def _host_topic(self, topic: TopicInfo) -> None:
        """Single-process mode: lead what the controller elected this broker to lead (a disk error
        leaves that partition offline, the others served)."""
        self.replica_manager.host_leaders(
            TopicPartitionState(topic.name, topic.topic_id, index, state) for index, state in topic.partitions.items() if state.leader == self.id
        )

    def _on_topic_change(self, change: TopicChange) -> None:
        name, topic = change.name, change.topic
        hosted = [p.index for p in self.replica_manager.leader_partitions() if p.topic == name]
        if topic is None and self.cluster_mode:
            # Gone from this broker's view (its znode deleted by hand, the topic-deletion
            # procedure's UpdateMetadata, or its last step): as on a Kafka broker, which does not
            # watch topic znodes, nothing is stopped or deleted here. A replica is deleted only on
            # the controller's StopReplica with delete (``ReplicaManager.stop_replicas_request``).
            return
        if topic is None:
            # Single-process mode: the embedded tree is written by this process alone (its
            # DeleteTopics and its controller), so a topic leaving it is this broker's own deletion.
            self.replica_manager.stop_replicas(name, hosted, delete=True)
            self.fetch_sessions.remove_topic(name)
            return
        if self.cluster_mode:
            # Leadership comes from the controller's LeaderAndIsr.
            self.replica_manager.update_config(name)
            self._maybe_enable_unclean_leader_election(change)
            return
        self._host_topic(topic)
        # Partitions this broker led and leads no more (offline, or led elsewhere) stop here;
        # their logs stay.
        lost = [index for index in hosted if index not in topic.partitions or topic.partitions[index].leader != self.id]
        if lost:
            self.replica_manager.stop_replicas(name, lost, delete=False)
        self.replica_manager.update_config(name)

    def _maybe_enable_unclean_leader_election(self, change: TopicChange) -> None:
        """Kafka 2.8's TopicConfigHandler: a config change of a topic whose
        ``unclean.leader.election.enable`` is true has the controller elect its offline partitions."""
        previous = change.previous.configs if change.previous is not None else None
        configs = change.topic.configs
        if configs != previous and configs.get("unclean.leader.election.enable", "").lower() == "true" and self.controller is not None:
            self.controller.enable_topic_unclean_leader_election(change.name)

    def replicas_stopped(self, partitions) -> None:
        """After a StopReplica request: fetch sessions forget deleted partitions' topics."""
        for name in sorted({p.topic for p in partitions}):
            if any(p.delete for p in partitions if p.topic == name) and not any(
                part.topic == name for part in self.replica_manager.leader_partitions()
            ):
                self.fetch_sessions.remove_topic(name)

    # -- periodic work -----------------------------------------------------------------------------

    def _schedule_periodic_work(self) -> None:
        lm = self.log_manager
        get = self.config.get
        self._every(get("log.flush.scheduler.interval.ms"), lm.flush_dirty_logs)
        self._every(get("log.retention.check.interval.ms"), lm.cleanup_logs)
        self._every(get("log.flush.offset.checkpoint.interval.ms"), lm.checkpoint_recovery_points)
        self._every(get("log.flush.start.offset.checkpoint.interval.ms"), lm.checkpoint_log_start_offsets)
        self._every(get("replica.high.watermark.checkpoint.interval.ms"), lm.checkpoint_high_watermarks)
        self._every(get("producer.id.expiration.check.interval.ms"), self._expire_producers)
        if self.cluster_mode:
            self.replica_manager.start_isr_expiration()
        if self.cluster_mode and get("auto.leader.rebalance.enable"):
            # The controller's preferred replica election, on the metadata thread.
            percentage = get("leader.imbalance.per.broker.percentage")
            self._every(
                get("leader.imbalance.check.interval.seconds") * 1000,
                lambda: self.metadata_thread.submit(lambda: self.controller.check_leader_imbalance(percentage)),
            )

    def _expire_producers(self) -> None:
        for partition_log in self.log_manager.all_logs():
            partition_log.remove_expired_producers()

    def _every(self, interval_ms: int, work) -> None:
        if interval_ms is None or interval_ms <= 0 or interval_ms >= 2**62:
            return
        self._tasks.append(asyncio.create_task(self._repeat(interval_ms / 1000, work)))

    async def _repeat(self, interval: float, work) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            try:
                await loop.run_in_executor(None, work)
            except Exception:
                log.exception("Periodic %s failed", getattr(work, "__name__", work))

    # -- controlled shutdown ----------------------------------------------------------------------

    async def _controlled_shutdown(self) -> None:
        """Ask the controller to move this broker's leadership away before stopping (Kafka's
        KafkaServer.controlledShutdown): up to ``controlled.shutdown.max.retries`` attempts,
        ``controlled.shutdown.retry.backoff.ms`` apart, then an unclean shutdown."""
        from kcli.client.connection import BrokerConnection

        log.info("[KafkaServer id=%d] Starting controlled shutdown", self.id)
        retries = self.config.get("controlled.shutdown.max.retries")
        backoff = self.config.get("controlled.shutdown.retry.backoff.ms") / 1000
        timeout = self.config.get("controller.socket.timeout.ms") / 1000
        for attempt in range(max(retries, 1)):
            if attempt:
                log.info("[KafkaServer id=%d] Retrying controlled shutdown (%d retries remaining)", self.id, retries - attempt)
                await asyncio.sleep(backoff)
            controller = self.metadata.controller_id()
            address = self.inter_broker_address(controller) if controller is not None else None
            if address is None:
                log.warning("[KafkaServer id=%d] No controller to send the controlled shutdown request to", self.id)
                continue
            try:
                connection = await BrokerConnection.open(
                    address[0], address[1], client_id=f"broker-{self.id}", timeout=timeout, security=self.inter_broker_security
                )
                try:
                    answer = await connection.call(ApiKey.CONTROLLED_SHUTDOWN, {"broker_id": self.id, "broker_epoch": self.broker_epoch}, timeout=timeout)
                finally:
                    await connection.close()
            except (KcliError, OSError) as e:
                log.warning("[KafkaServer id=%d] Error during controlled shutdown, possibly because leader movement took "
                            "longer than the configured controller.socket.timeout.ms: %s", self.id, e)
                continue
            error = ErrorCode.for_code(int(answer.error_code))
            if error == ErrorCode.NONE and not answer.remaining_partitions:
                log.info("[KafkaServer id=%d] Controlled shutdown request returned successfully", self.id)
                return
            remaining = ",".join(f"{p.topic_name}-{p.partition_index}" for p in answer.remaining_partitions)
            log.info("[KafkaServer id=%d] Remaining partitions to move: %s", self.id, remaining)
            log.info("[KafkaServer id=%d] Error from controller: %s", self.id, error.name)
        log.warning("[KafkaServer id=%d] Proceeding to do an unclean shutdown as all the controlled shutdown attempts failed", self.id)

    # -- stop --------------------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stopped.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def shutdown(self, grace: float = 30.0) -> None:
        log.info("[KafkaServer id=%d] shutting down", self.id)
        if self.cluster_mode and self.config.get("controlled.shutdown.enable") and self._logs_loaded:
            await self._controlled_shutdown()
        self.server.stop_accepting()
        if self.replica_manager is not None:
            self.replica_manager.shutdown_purgatories()
            await self.replica_manager.shutdown_replication()
        if self.transaction_coordinator is not None:
            await self.transaction_coordinator.shutdown()
        if self.add_partitions_to_txn_manager is not None:
            await self.add_partitions_to_txn_manager.close()
        if self.group_coordinator is not None:
            await self.group_coordinator.shutdown()
        await self.server.drain_and_close(grace)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.controller is not None:
            self.controller.shutdown()
        if self.controller_channel is not None:
            await self.controller_channel.close()
        if self.metadata is not None:
            self.metadata.close()
        if self.credential_cache is not None:
            self.credential_cache.stop()
        if self.acl_change_listener is not None:
            self.acl_change_listener.stop()
        if self.zk_client is not None:
            try:
                await self.metadata_thread.call(self.zk_client.store.close)
            except OSError as e:
                # The embedded tree could not record the end of the session (a full disk): its
                # ephemeral nodes are never persisted, so they end with the process all the same.
                log.warning("Could not close the metadata store cleanly: %s", e)
        if self.metadata_thread is not None:
            self.metadata_thread.close()
        if self.log_manager is not None:
            # Only logs that were loaded (recovered) may be marked cleanly shut down.
            finish = self.log_manager.shutdown if self._logs_loaded else self.log_manager.abandon
            await asyncio.get_running_loop().run_in_executor(None, finish)
        log.info("[KafkaServer id=%d] shut down completed", self.id)


def _endpoint_on(endpoints, listener_name: str):
    """The endpoint of ``endpoints`` on the listener ``listener_name``, or None."""
    name = listener_name.upper()
    return next((endpoint for endpoint in endpoints if endpoint.listener_name.upper() == name), None)
