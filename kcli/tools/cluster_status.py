"""``kcli cluster status``: a ZooKeeper-mode cluster's brokers, controller, offline and
under-replicated partitions.

Read from Kafka's znodes (``KafkaZkClient``), writing nothing: the registered brokers
(``/brokers/ids/N``: id, endpoints, rack), the controller (``/controller``) and its epoch
(``/controller_epoch``), the offline partitions: those whose state znode has no leader (-1)
or a leader that is not a registered broker (Kafka's ``--unavailable-partitions``), and the
under-replicated partitions: those whose ISR (in the state znode) is smaller than their
assignment (Kafka's ``--under-replicated-partitions``; an offline partition of more than one
replica is one too, its ISR keeping its last member; a partition without a state znode counts
with an empty ISR). Partitions are sorted by topic, then partition. The session and connection
timeouts are those of Kafka's ZooKeeper-mode tools (30 s). A chroot that does not exist holds no
cluster: one line, exit 1.

Plain output::

    Brokers: 2
    \tBroker: 0\tEndpoints: PLAINTEXT://127.0.0.1:9092\tRack: none
    Controller: 0\tControllerEpoch: 1
    OfflinePartitions: 1
    \tTopic: T\tPartition: 0\tLeader: none\tReplicas: 1\tIsr: 1
    UnderReplicatedPartitions: 1
    \tTopic: U\tPartition: 0\tLeader: 0\tReplicas: 0,1\tIsr: 0

``Controller: none`` when no broker holds the role. ``--output json`` writes one object:
``{"brokers": [{"id": int, "endpoints": [str], "rack": str | null}], "controller": int | null,
"controller_epoch": int | null, "offline_partitions": [{"topic": str, "partition": int, "leader":
int, "replicas": [int], "isr": [int]}], "under_replicated_partitions": [the same]}`` (``leader``
-1 for none). A znode that cannot be parsed is named on stderr and left out; the command then
exits 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kcli.errors import EXIT_ERROR, EXIT_OK, KcliError
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import NoNodeError
from kcli.metadata.zk_client import KafkaZkClient
from kcli.metadata.zookeeper import ZooKeeperStore
from kcli.output import Output
from kcli.tools.zk_session import open_cluster_store

# Kafka's ZooKeeper-mode tools (TopicCommand, ZkSecurityMigrator) open their sessions with these.
TOOL_TIMEOUT_MS = 30000


@dataclass
class ClusterStatus:
    brokers: list[tuple[int, zk.BrokerRegistration]] = field(default_factory=list)
    controller: int | None = None
    controller_epoch: int | None = None
    offline: list[tuple[str, int, zk.LeaderAndIsr | None, tuple[int, ...]]] = field(default_factory=list)
    under_replicated: list[tuple[str, int, zk.LeaderAndIsr | None, tuple[int, ...]]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "brokers": [
                {"id": broker_id, "endpoints": [e.connection_string for e in reg.endpoints], "rack": reg.rack}
                for broker_id, reg in self.brokers
            ],
            "controller": self.controller,
            "controller_epoch": self.controller_epoch,
            "offline_partitions": [_partition_json(*item) for item in self.offline],
            "under_replicated_partitions": [_partition_json(*item) for item in self.under_replicated],
        }

    def lines(self) -> list[str]:
        lines = [f"Brokers: {len(self.brokers)}"]
        for broker_id, reg in self.brokers:
            endpoints = ",".join(e.connection_string for e in reg.endpoints)
            lines.append(f"\tBroker: {broker_id}\tEndpoints: {endpoints}\tRack: {reg.rack or 'none'}")
        lines.append(f"Controller: {_text(self.controller)}\tControllerEpoch: {_text(self.controller_epoch)}")
        lines.append(f"OfflinePartitions: {len(self.offline)}")
        lines.extend(_partition_line(*item) for item in self.offline)
        lines.append(f"UnderReplicatedPartitions: {len(self.under_replicated)}")
        lines.extend(_partition_line(*item) for item in self.under_replicated)
        return lines


def _partition_json(topic: str, partition: int, state: zk.LeaderAndIsr | None, replicas: tuple[int, ...]) -> dict[str, Any]:
    return {"topic": topic, "partition": partition, "leader": _leader(state), "replicas": list(replicas), "isr": list(_isr(state))}


def _partition_line(topic: str, partition: int, state: zk.LeaderAndIsr | None, replicas: tuple[int, ...]) -> str:
    """Kafka's partition line of kafka-topics.sh --describe (without the ELR fields)."""
    leader = _leader(state)
    return (
        f"\tTopic: {topic}\tPartition: {partition}\tLeader: {leader if leader >= 0 else 'none'}"
        f"\tReplicas: {','.join(map(str, replicas))}\tIsr: {','.join(map(str, _isr(state)))}"
    )


def is_offline(state: zk.LeaderAndIsr | None, live: set[int]) -> bool:
    """No leader, or a leader that is not a registered broker (Kafka's --unavailable-partitions)."""
    return _leader(state) == zk.NO_LEADER or _leader(state) not in live


def is_under_replicated(state: zk.LeaderAndIsr | None, replicas: tuple[int, ...]) -> bool:
    """An ISR smaller than the assignment (Kafka's --under-replicated-partitions)."""
    return len(replicas) - len(_isr(state)) > 0


def _leader(state: zk.LeaderAndIsr | None) -> int:
    return state.leader if state is not None else zk.NO_LEADER


def _isr(state: zk.LeaderAndIsr | None) -> tuple[int, ...]:
    return state.isr if state is not None else ()


def _text(value: int | None) -> str:
    return "none" if value is None else str(value)


def read_status(client: KafkaZkClient) -> ClusterStatus:
    status = ClusterStatus()
    for broker_id in client.registered_brokers():
        try:
            registration = client.broker_registration(broker_id)
        except zk.ZNodeFormatError as e:
            status.unreadable.append(f"{zk.broker_id_path(broker_id)}: {e}")
            continue
        if registration is not None:  # gone since the listing
            status.brokers.append((broker_id, registration))
    live = {broker_id for broker_id, _ in status.brokers}
    status.controller = _read(status, zk.CONTROLLER, lambda data: zk.decode_controller(data).broker_id, client)
    status.controller_epoch = _read(status, zk.CONTROLLER_EPOCH, zk.decode_controller_epoch, client)
    try:
        topics = sorted(client.topic_names())
    except NoNodeError:
        topics = []
    for topic in topics:
        try:
            assignment, _ = client.topic_assignment(topic)
        except zk.ZNodeFormatError as e:
            status.unreadable.append(f"{zk.topic_path(topic)}: {e}")
            continue
        except KcliError:  # deleted since the listing
            continue
        for partition, replicas in sorted(assignment.partitions.items()):
            try:
                loaded = client.partition_state(topic, partition)
            except zk.ZNodeFormatError as e:
                status.unreadable.append(f"{zk.partition_state_path(topic, partition)}: {e}")
                continue
            state = loaded[0] if loaded is not None else None
            if is_offline(state, live):
                status.offline.append((topic, partition, state, replicas))
            if is_under_replicated(state, replicas):
                status.under_replicated.append((topic, partition, state, replicas))
    return status


def _read(status: ClusterStatus, path: str, decode, client: KafkaZkClient):
    """One znode decoded, or None when it does not exist (this tool creates nothing)."""
    try:
        return decode(client.store.get(path)[0])
    except NoNodeError:
        return None
    except zk.ZNodeFormatError as e:
        status.unreadable.append(f"{path}: {e}")
        return None


def open_store(connect: str) -> ZooKeeperStore:
    """A session on the cluster's ZooKeeper; the chroot must exist (a broker creates it)."""
    return open_cluster_store(connect, session_timeout_ms=TOOL_TIMEOUT_MS, connection_timeout_ms=TOOL_TIMEOUT_MS)


def print_status(connect: str, out: Output) -> int:
    store = open_store(connect)
    try:
        status = read_status(KafkaZkClient(store))
    finally:
        store.close()
    if out.json:
        out.obj(status.as_json())
    else:
        out.lines(status.lines())
    out.flush()
    for problem in status.unreadable:
        out.diag(f"Error: skipped {problem}")
    return EXIT_ERROR if status.unreadable else EXIT_OK
