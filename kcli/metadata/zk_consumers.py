"""ZooKeeper-stored consumer offsets: the old (Scala) consumer's ``/consumers`` tree.

Kafka's old consumer kept each group under ``/consumers/<group>``::

    ids/<consumerId>            ephemeral, the member's registration (zk_paths.ConsumerRegistration)
    owners/<topic>/<partition>  ephemeral, the consumer thread owning the partition
    offsets/<topic>/<partition> persistent, the next offset to consume as a decimal string

``ZkConsumerGroups`` reads and writes that tree on any ``MetadataStore`` (ZooKeeper through kazoo
in practice). Reading many groups is pipelined level by level (``get_children_many``/``get_many``:
one round trip per level, not per node), and ``write_offsets`` applies one group's offsets as one
ZooKeeper transaction (``multi``), creating the parents it needs: all of them or none. A znode
whose data is not a number is not an offset: reads report it in ``StoredOffsets.malformed`` with
its path instead of failing the whole group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kcli.common import TopicPartition
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import ANY_VERSION, CreateOp, MetadataStore, NodeExistsError, NoNodeError, Op, SetDataOp


@dataclass
class StoredOffsets:
    """One group's offsets as read from ``/consumers/<group>/offsets``; ``malformed`` holds
    (path, reason) for the nodes that could not be read as an offset."""

    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    malformed: list[tuple[str, str]] = field(default_factory=list)


class ZkConsumerGroups:
    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    # -- groups and members -----------------------------------------------------------------------

    def groups(self) -> list[str]:
        """Every group under ``/consumers``, sorted."""
        return self.store.get_children_many([zk.CONSUMERS])[zk.CONSUMERS] or []

    def groups_with_offsets(self) -> list[str]:
        """The groups that have an ``offsets`` node."""
        names = self.groups()
        found = self.store.get_children_many([zk.consumer_offsets_path(g) for g in names])
        return [g for g in names if found[zk.consumer_offsets_path(g)] is not None]

    def members(self, groups: Sequence[str]) -> dict[str, list[str]]:
        """Each group's registered consumer ids (its live members; ``ids`` holds ephemeral nodes)."""
        found = self.store.get_children_many([zk.consumer_ids_path(g) for g in groups])
        return {g: found[zk.consumer_ids_path(g)] or [] for g in groups}

    def registrations(self, group: str) -> dict[str, zk.ConsumerRegistration]:
        ids = self.members([group])[group]
        found = self.store.get_many([zk.consumer_id_path(group, c) for c in ids])
        result = {}
        for consumer_id in ids:
            entry = found[zk.consumer_id_path(group, consumer_id)]
            if entry is not None:
                result[consumer_id] = zk.decode_consumer_registration(entry[0])
        return result

    def owners(self, group: str) -> dict[TopicPartition, str]:
        """Which consumer thread owns each partition of the group (``owners/<topic>/<partition>``)."""
        root = zk.consumer_owners_path(group)
        topics = self.store.get_children_many([root])[root] or []
        by_topic = self.store.get_children_many([zk.consumer_topic_owners_path(group, t) for t in topics])
        paths: dict[str, TopicPartition] = {}
        for topic in topics:
            for name in by_topic[zk.consumer_topic_owners_path(group, topic)] or []:
                if name.isdigit():
                    paths[zk.consumer_owner_path(group, topic, int(name))] = TopicPartition(topic, int(name))
        found = self.store.get_many(list(paths))
        return {tp: zk.decode_consumer_owner(found[p][0]) for p, tp in paths.items() if found[p] is not None}

    def owned_topics(self, group: str) -> list[str]:
        root = zk.consumer_owners_path(group)
        return self.store.get_children_many([root])[root] or []

    def register_consumer(self, group: str, consumer_id: str, registration: zk.ConsumerRegistration) -> None:
        """Create the member's ephemeral ``ids/<consumerId>`` node (and the group's nodes)."""
        for path in (zk.consumer_ids_path(group), zk.consumer_owners_path(group), zk.consumer_offsets_path(group)):
            self.store.ensure_path(path)
        self.store.create(zk.consumer_id_path(group, consumer_id), zk.encode_consumer_registration(registration), ephemeral=True)

    def unregister_consumer(self, group: str, consumer_id: str) -> None:
        try:
            self.store.delete(zk.consumer_id_path(group, consumer_id))
        except NoNodeError:
            pass

    def claim_partition(self, group: str, tp: TopicPartition, thread_id: str) -> bool:
        """Take ownership of a partition (an ephemeral node); False when another thread owns it."""
        self.store.ensure_path(zk.consumer_topic_owners_path(group, tp.topic))
        try:
            self.store.create(zk.consumer_owner_path(group, tp.topic, tp.partition), zk.encode_consumer_owner(thread_id), ephemeral=True)
        except NodeExistsError:
            return False
        return True

    def release_partition(self, group: str, tp: TopicPartition) -> None:
        try:
            self.store.delete(zk.consumer_owner_path(group, tp.topic, tp.partition))
        except NoNodeError:
            pass

    # -- offsets ----------------------------------------------------------------------------------

    def read_offsets(self, groups: Sequence[str], topics: Iterable[str] | None = None) -> dict[str, StoredOffsets | None]:
        """Each group's stored offsets (None for a group without an ``offsets`` node), of every
        topic or only of ``topics``; three pipelined round trips whatever the number of groups."""
        wanted = None if topics is None else set(topics)
        roots = self.store.get_children_many([zk.consumer_offsets_path(g) for g in groups])
        topic_paths = {
            zk.consumer_topic_offsets_path(g, t): (g, t)
            for g in groups
            for t in roots[zk.consumer_offsets_path(g)] or []
            if wanted is None or t in wanted
        }
        partitions = self.store.get_children_many(list(topic_paths))
        result: dict[str, StoredOffsets | None] = {
            g: (None if roots[zk.consumer_offsets_path(g)] is None else StoredOffsets()) for g in groups
        }
        nodes: dict[str, tuple[str, TopicPartition]] = {}
        for path, (group, topic) in topic_paths.items():
            stored = result[group]
            assert stored is not None
            for name in partitions[path] or []:
                node = f"{path}/{name}"
                if not (name.isascii() and name.isdigit()) or int(name) > 2**31 - 1:
                    stored.malformed.append((node, f"{name!r} is not a partition number"))
                    continue
                nodes[node] = (group, TopicPartition(topic, int(name)))
        values = self.store.get_many(list(nodes))
        for node, (group, tp) in nodes.items():
            stored = result[group]
            assert stored is not None
            entry = values[node]
            if entry is None:
                continue  # deleted meanwhile
            try:
                stored.offsets[tp] = zk.decode_consumer_offset(entry[0])
            except zk.ZNodeFormatError as exc:
                stored.malformed.append((node, str(exc)))
        for stored in result.values():
            if stored is not None:
                stored.offsets = dict(sorted(stored.offsets.items()))
                stored.malformed.sort()
        return result

    def write_offsets(self, group: str, offsets: Mapping[TopicPartition, int], *, if_unchanged: bool = True) -> None:
        """Store the group's offsets in one transaction (create-or-set each node, creating the
        missing parents): every offset is written, or none is. With ``if_unchanged`` a node
        changed by someone else since it was read fails the transaction (``BadVersionError``);
        without it the last writer wins, as the old consumer's commits did."""
        if not offsets:
            return
        try:
            self.store.multi(self.write_ops(group, offsets, if_unchanged=if_unchanged))
        except NodeExistsError:
            if if_unchanged:
                raise
            # Another member created a node between the read and the write: read again, once.
            self.store.multi(self.write_ops(group, offsets, if_unchanged=False))

    def write_ops(self, group: str, offsets: Mapping[TopicPartition, int], *, if_unchanged: bool = True) -> list[Op]:
        """The transaction's operations; which nodes exist is read first, pipelined."""
        topics = sorted({tp.topic for tp in offsets})
        parents = [zk.CONSUMERS, zk.consumer_group_path(group), zk.consumer_offsets_path(group)]
        parents += [zk.consumer_topic_offsets_path(group, t) for t in topics]
        nodes = [zk.consumer_offset_path(group, tp.topic, tp.partition) for tp in sorted(offsets)]
        existing = self.store.get_many(parents + nodes)
        ops: list[Op] = [CreateOp(p) for p in parents if existing[p] is None]
        for tp in sorted(offsets):
            path = zk.consumer_offset_path(group, tp.topic, tp.partition)
            value = zk.encode_consumer_offset(offsets[tp])
            entry = existing[path]
            # A node created or changed since it was read makes the transaction fail as a whole.
            ops.append(CreateOp(path, value) if entry is None else SetDataOp(path, value, entry[1].version if if_unchanged else ANY_VERSION))
        return ops

    def delete_offsets(self, group: str) -> None:
        """Remove the group's ``offsets`` subtree (the group's other nodes stay)."""
        try:
            self.store.delete(zk.consumer_offsets_path(group), recursive=True)
        except NoNodeError:
            pass
