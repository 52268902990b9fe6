"""The ZooKeeper-era views of old-consumer groups: ``consumer-groups --zookeeper`` (Kafka 1.1's
ZkConsumerGroupService) and ``consumer-offset-checker`` (ConsumerOffsetChecker, 0.8-0.11).

Both read a group's ``/consumers/<group>`` tree: the topics are the children of ``owners`` (an old
consumer group whose consumers are all stopped has none, and shows no partitions, as in Kafka),
each topic's partitions come from ``/brokers/topics/<topic>``, the owner of a partition from
``owners/<topic>/<partition>``. A partition's offset is the Kafka-stored one when the group has
one (OffsetFetch at the group's coordinator), else the ZooKeeper-stored one, as the old tools
fetched them; its log size is the leader's log end offset. The brokers are found in ZooKeeper
(``/brokers/ids``), as the old tools found them.

consumer-groups --zookeeper --describe (Kafka 1.1), after a blank line::

    TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     <- trailing space

``%-<T>s %-10s %-15s %-15s %-15s %-<C>s `` (T and C: the longest topic and consumer id, at least
15); old-consumer groups have no HOST and CLIENT-ID columns. Owned partitions come first (topics
as ``owners`` lists them, partitions in order), then a row of ``-`` per topic subscribed by a
registered consumer that owns nothing.

consumer-offset-checker::

    Group           Topic                          Pid Offset          logSize         Lag             Owner

``%-15s %-30s %-3s %-15s %-15s %-15s %s`` per partition, ``unknown`` for an offset it could not
find (a missing node in an existing ``offsets/<topic>``) and ``none`` for a partition nobody owns.
"""

from __future__ import annotations

from dataclasses import dataclass

from kcli.common import TopicPartition
from kcli.errors import KcliError
from kcli.metadata import zk_paths as zk
from kcli.output import Output
from kcli.tools.consumer_offsets_command import Options, Stores

MISSING = "-"
OLD_CONSUMER_NOTE = "Note: This will only show information about consumers that use ZooKeeper (not those using the Java consumer API)."


@dataclass
class PartitionRow:
    topic: str
    partition: int
    offset: int | None  # None: not found; -1: the old checker's "unknown"
    log_end: int | None
    owner: str | None  # the owning thread id, as owners/<t>/<p> holds it


class OldConsumerGroups:
    """A ZooKeeper session (and, on demand, the brokers it names) for the old tools."""

    def __init__(self, connect: str, timeout_ms: int, out: Output) -> None:
        self.out = out
        self.stores = Stores(Options(zookeeper=connect, timeout_ms=timeout_ms), out)

    def close(self) -> None:
        self.stores.close()

    @property
    def groups(self):
        return self.stores.zk

    def group_ids(self) -> list[str]:
        return self.groups.groups()

    def exists(self, group: str) -> bool:
        return self.groups.store.exists(zk.consumer_group_path(group)) is not None

    def _kafka(self) -> Stores:
        """The Kafka connection, bootstrapped from the brokers registered in ZooKeeper."""
        if self.stores.o.bootstrap_server is None:
            from kcli.metadata.zk_client import KafkaZkClient

            client = KafkaZkClient(self.groups.store)
            addresses = []
            for broker_id in client.registered_brokers():
                registration = client.broker_registration(broker_id)
                if registration is not None and registration.host:
                    addresses.append(f"{registration.host}:{registration.port}")
            if not addresses:
                raise KcliError("No broker is registered in ZooKeeper (/brokers/ids is empty)")
            self.stores.o.bootstrap_server = ",".join(addresses)
        return self.stores

    def brokers(self) -> dict[int, str]:
        from kcli.metadata.zk_client import KafkaZkClient

        client = KafkaZkClient(self.groups.store)
        found = {}
        for broker_id in client.registered_brokers():
            registration = client.broker_registration(broker_id)
            if registration is not None:
                found[broker_id] = f"{registration.host}:{registration.port}"
        return found

    def partitions_of(self, topics: list[str]) -> dict[str, list[int]]:
        """Each topic's partitions from ``/brokers/topics/<topic>`` (a topic without it is left out)."""
        found = self.groups.store.get_many([zk.topic_path(t) for t in topics])
        result = {}
        for topic in topics:
            entry = found[zk.topic_path(topic)]
            if entry is not None:
                result[topic] = sorted(zk.decode_topic_assignment(entry[0]).partitions)
        return result

    def rows(self, group: str, topics: list[str], *, unknown_when_dir_exists: bool) -> list[PartitionRow]:
        """A row per partition of ``topics``, with the group's offset, the log end and the owner."""
        from kcli.client.admin import LATEST
        from kcli.errors import KafkaError

        by_topic = self.partitions_of(topics)
        tps = [TopicPartition(t, p) for t in topics for p in by_topic.get(t, [])]
        if not tps:
            return []
        kafka = self._kafka()
        committed = {tp: v.offset for tp, v in kafka.run(kafka.group_admin.fetch_offsets(group, tps)).items()}
        stored = self.groups.read_offsets([group], topics)[group]
        zk_offsets = stored.offsets if stored is not None else {}
        dirs = self.groups.store.get_children_many([zk.consumer_topic_offsets_path(group, t) for t in topics])
        ends = kafka.run(kafka.group_admin.list_offsets(tps, LATEST))
        owners = self.groups.owners(group)
        rows = []
        for tp in tps:
            offset = committed.get(tp, zk_offsets.get(tp))
            if offset is None and unknown_when_dir_exists:
                if dirs[zk.consumer_topic_offsets_path(group, tp.topic)] is None:
                    raise KcliError(f"org.apache.zookeeper.KeeperException$NoNodeException: KeeperErrorCode = NoNode for {zk.consumer_offset_path(group, tp.topic, tp.partition)}")
                offset = -1
            end = ends.get(tp)
            rows.append(PartitionRow(tp.topic, tp.partition, offset, None if isinstance(end, KafkaError) or end is None else end.offset,
                                     owners.get(tp)))
        return rows


# -- consumer-groups --zookeeper ------------------------------------------------------------------


def consumer_groups(connect: str, action: str, group: str | None, timeout_ms: int) -> int:
    out = Output()
    out.diag(OLD_CONSUMER_NOTE)
    view = OldConsumerGroups(connect, timeout_ms, out)
    try:
        if action == "list":
            out.lines(view.group_ids())
            return 0
        assert group is not None
        if not view.exists(group):
            out.diag(f"Error: The consumer group '{group}' does not exist.")
            return 1
        topics = view.groups.owned_topics(group)
        rows = view.rows(group, topics, unknown_when_dir_exists=False)
        table = [[r.topic, str(r.partition), _text(r.offset), _text(r.log_end), _lag(r.offset, r.log_end),
                  _consumer_id(r.owner)] for r in rows]
        owning = {_consumer_id(r.owner) for r in rows}
        registrations = view.groups.registrations(group)
        for consumer_id in sorted(c for c in registrations if c not in owning):
            for _topic in sorted(registrations[consumer_id].subscription):
                table.append([MISSING] * 5 + [consumer_id])
        headers = ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID"]
        topic_width = max([15] + [len(r[0]) for r in table])
        id_width = max([15] + [len(r[5]) for r in table])

        def line(cells: list[str]) -> str:
            return f"{cells[0]:<{topic_width}} {cells[1]:<10} {cells[2]:<15} {cells[3]:<15} {cells[4]:<15} {cells[5]:<{id_width}} "

        out.table(headers, table, [line(headers)] + [line(r) for r in table])
        return 0
    finally:
        out.flush()
        view.close()


def _consumer_id(owner: str | None) -> str:
    """The consumer id of an owner thread id (``<consumerId>-<thread>``), as Kafka 1.1 cut it."""
    if owner is None:
        return MISSING
    cut = owner.rfind("-")
    return owner[:cut] if cut >= 0 else owner


def _text(value: int | None) -> str:
    return MISSING if value is None else str(value)


def _lag(offset: int | None, end: int | None) -> str:
    if offset is None or offset == -1 or end is None:
        return MISSING
    return str(end - offset)


# -- consumer-offset-checker ----------------------------------------------------------------------


def offset_checker(connect: str, group: str, topics: list[str] | None, broker_info: bool, timeout_ms: int) -> int:
    out = Output()
    view = OldConsumerGroups(connect, timeout_ms, out)
    try:
        try:
            topic_list = topics if topics is not None else view.groups.owned_topics(group)
            if topics is None and view.groups.store.exists(zk.consumer_owners_path(group)) is None:
                raise KcliError(f"org.apache.zookeeper.KeeperException$NoNodeException: KeeperErrorCode = NoNode for {zk.consumer_owners_path(group)}")
            rows = view.rows(group, sorted(topic_list), unknown_when_dir_exists=True)
        except KcliError as exc:
            out.line(f"Exiting due to: {exc}.")
            return 1
        out.line(f"{'Group':<15} {'Topic':<30} {'Pid':<3} {'Offset':<15} {'logSize':<15} {'Lag':<15} Owner")
        for r in rows:
            offset = "unknown" if r.offset is None else str(r.offset)
            lag = "unknown" if r.offset is None or r.offset == -1 or r.log_end is None else str(r.log_end - r.offset)
            size = "unknown" if r.log_end is None else str(r.log_end)
            out.line(f"{group:<15} {r.topic:<30} {r.partition!s:<3} {offset:<15} {size:<15} {lag:<15} {r.owner or 'none'}")
        if broker_info:
            out.line("BROKER INFO")
            for broker_id, address in sorted(view.brokers().items()):
                out.line(f"{broker_id} -> {address}")
        return 0
    finally:
        out.flush()
        view.close()
