"""The controller's requests of one event, gathered then sent: Kafka's ControllerBrokerRequestBatch.

While the controller handles an event (a broker started or failed, a topic created or deleted, a
controlled shutdown) it adds, per broker, the partitions to lead or follow (LeaderAndIsr), the
replicas to stop (StopReplica, with or without deleting their logs) and the partition states to
publish (UpdateMetadata, always with the full list of live brokers); ``send`` then queues one
request of each kind per broker on the channel, in Kafka's order: LeaderAndIsr, UpdateMetadata,
StopReplica. Every request carries the controller's epoch and the receiving broker's epoch.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcli.metadata import zk_paths as zk
from kcli.metadata.topics import TopicPartitionState
from kcli.protocol.api_keys import ApiKey

LEADER_DURING_DELETE = -2  # Kafka's LeaderAndIsr.LeaderDuringDelete: the partition is being deleted
EPOCH_DURING_DELETE = -2  # Kafka's LeaderAndIsr.EpochDuringDelete


@dataclass(frozen=True, slots=True)
class LiveBroker:
    """What the controller knows of a live broker: its registration, its epoch (the czxid of its
    registration) and the inter-broker endpoint the channel sends to."""

    broker_id: int
    registration: zk.BrokerRegistration
    epoch: int
    host: str
    port: int


@dataclass
class _Stops:
    partitions: dict[tuple[str, int], tuple[int, bool]] = field(default_factory=dict)  # -> (leader epoch, delete)
    callbacks: list[Callable[[int, Any], None]] = field(default_factory=list)


class ControllerBrokerRequestBatch:
    def __init__(self, controller_id: int, channel: Any) -> None:
        self.controller_id = controller_id
        self.channel = channel
        self._leader_and_isr: dict[int, dict[tuple[str, int], tuple[TopicPartitionState, bool]]] = {}
        self._stop_replica: dict[int, _Stops] = {}
        self._update_metadata_brokers: set[int] = set()
        self._update_metadata_partitions: dict[tuple[str, int], TopicPartitionState] = {}

    def is_empty(self) -> bool:
        return not (self._leader_and_isr or self._stop_replica or self._update_metadata_brokers)

    def add_leader_and_isr(self, broker_ids: Iterable[int], partition: TopicPartitionState, *, is_new: bool = False) -> None:
        """Tell ``broker_ids`` the partition's state (Kafka adds an UpdateMetadata for it too)."""
        for broker_id in broker_ids:
            if broker_id >= 0:
                self._leader_and_isr.setdefault(broker_id, {})[(partition.topic, partition.index)] = (partition, is_new)

    def add_stop_replica(
        self, broker_ids: Iterable[int], topic: str, index: int, *, delete: bool, leader_epoch: int,
        callback: Callable[[int, Any], None] | None = None,
    ) -> None:
        """Stop (and with ``delete`` remove) the replica on ``broker_ids``; ``callback(broker id,
        answer)`` runs when each broker answers."""
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            stops = self._stop_replica.setdefault(broker_id, _Stops())
            previous = stops.partitions.get((topic, index))
            stops.partitions[(topic, index)] = (leader_epoch, delete or (previous is not None and previous[1]))
            if callback is not None and callback not in stops.callbacks:
                stops.callbacks.append(callback)

    def add_update_metadata(self, broker_ids: Iterable[int], partitions: Iterable[TopicPartitionState] = ()) -> None:
        """Publish the live brokers, and these partitions' states, to ``broker_ids``."""
        self._update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        for partition in partitions:
            self._update_metadata_partitions[(partition.topic, partition.index)] = partition

    def send(self, controller_epoch: int, live: Mapping[int, LiveBroker]) -> None:
        """Queue the gathered requests on the channel, then start a new batch."""
        for broker_id, partitions in sorted(self._leader_and_isr.items()):
            if broker_id in live:
                self.channel.send(broker_id, ApiKey.LEADER_AND_ISR, self._leader_and_isr_fields(controller_epoch, live, broker_id, partitions.values()))
        if self._update_metadata_brokers:
            states = list(self._update_metadata_partitions.values())
            for broker_id in sorted(self._update_metadata_brokers):
                if broker_id in live:
                    self.channel.send(broker_id, ApiKey.UPDATE_METADATA, self._update_metadata_fields(controller_epoch, live, broker_id, states))
        for broker_id, stops in sorted(self._stop_replica.items()):
            if broker_id in live:
                callbacks = list(stops.callbacks)
                self.channel.send(
                    broker_id, ApiKey.STOP_REPLICA, self._stop_replica_fields(controller_epoch, live, broker_id, stops),
                    (lambda answer, b=broker_id, cbs=callbacks: [cb(b, answer) for cb in cbs]) if callbacks else None,
                )
        self.clear()

    def clear(self) -> None:
        """Start a new batch, dropping what was gathered."""
        self._leader_and_isr.clear()
        self._stop_replica.clear()
        self._update_metadata_brokers.clear()
        self._update_metadata_partitions.clear()

    # -- the requests' fields (by Kafka 3.9's names, for every version) ---------------------------

    def _leader_and_isr_fields(self, controller_epoch: int, live, broker_id: int, partitions) -> dict:
        partitions = list(partitions)
        leaders = {p.state.leader for p, _ in partitions}
        states = [
            (p, {
                **_partition_fields(p),
                "partition_epoch": p.state.partition_epoch,
                "adding_replicas": list(p.state.adding_replicas),
                "removing_replicas": list(p.state.removing_replicas),
                "is_new": is_new,
                "leader_recovery_state": p.state.leader_recovery_state,
            })
            for p, is_new in partitions
        ]
        return {
            **self._header(controller_epoch, live, broker_id, states),
            "live_leaders": [
                {"broker_id": b, "host_name": live[b].host, "port": live[b].port} for b in sorted(leaders) if b in live
            ],
        }

    def _update_metadata_fields(self, controller_epoch: int, live, broker_id: int, states: list[TopicPartitionState]) -> dict:
        fields = [
            (p, {
                **_partition_fields(p),
                "zk_version": p.state.partition_epoch,
                "offline_replicas": [r for r in p.state.replicas if r not in live],
            })
            for p in states
        ]
        return {
            **self._header(controller_epoch, live, broker_id, fields),
            "live_brokers": [
                {
                    "id": b.broker_id,
                    "endpoints": [
                        {"port": e.port, "host": e.host, "listener": e.listener_name,
                         "security_protocol": zk.SECURITY_PROTOCOLS.index(e.security_protocol) if e.security_protocol in zk.SECURITY_PROTOCOLS else 0}
                        for e in b.registration.endpoints
                    ],
                    "rack": b.registration.rack,
                }
                for b in sorted(live.values(), key=lambda b: b.broker_id)
            ],
        }

    def _header(self, controller_epoch: int, live, broker_id: int, states) -> dict:
        """The fields LeaderAndIsr and UpdateMetadata share: who sends, to which registration, and
        the partitions' fields grouped by topic."""
        by_topic: dict[str, tuple[uuid.UUID | None, list]] = {}
        for p, fields in states:
            by_topic.setdefault(p.topic, (p.topic_id, []))[1].append(fields)
        return {
            "controller_id": self.controller_id,
            "controller_epoch": controller_epoch,
            "broker_epoch": live[broker_id].epoch,
            "topic_states": [
                {"topic_name": name, "topic_id": topic_id or uuid.UUID(int=0), "partition_states": partitions}
                for name, (topic_id, partitions) in sorted(by_topic.items())
            ],
        }

    def _stop_replica_fields(self, controller_epoch: int, live, broker_id: int, stops: _Stops) -> dict:
        by_topic: dict[str, list] = {}
        for (topic, index), (leader_epoch, delete) in sorted(stops.partitions.items()):
            by_topic.setdefault(topic, []).append({"partition_index": index, "leader_epoch": leader_epoch, "delete_partition": delete})
        return {
            "controller_id": self.controller_id,
            "controller_epoch": controller_epoch,
            "broker_epoch": live[broker_id].epoch,
            "topic_states": [{"topic_name": name, "partition_states": parts} for name, parts in by_topic.items()],
        }


def _partition_fields(partition: TopicPartitionState) -> dict:
    """A partition's state as both LeaderAndIsr and UpdateMetadata carry it."""
    state = partition.state
    return {
        "partition_index": partition.index,
        "controller_epoch": state.controller_epoch,
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "isr": list(state.isr),
        "replicas": list(state.replicas),
    }
