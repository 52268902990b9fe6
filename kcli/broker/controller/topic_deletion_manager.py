"""Topic deletion through the brokers: Kafka's TopicDeletionManager.

A topic marked under ``/admin/delete_topics`` (by DeleteTopics on any broker, or a ZooKeeper-era
tool) is deleted by the active controller in steps:

1. every live broker is sent UpdateMetadata with the topic's partitions led by -2
   (LeaderDuringDelete): they stop serving it;
2. each replica on a live broker moves to ReplicaDeletionStarted and its broker is sent
   StopReplica with ``delete_partition`` (leader epoch -2, EpochDuringDelete); a replica on a
   broker that is down is ReplicaDeletionIneligible;
3. an answer without error makes the replica ReplicaDeletionSuccessful, an error
   ReplicaDeletionIneligible;
4. once every replica is ReplicaDeletionSuccessful the topic's znodes go (its partitions,
   assignment, config and mark): the deletion is complete. Until then the topic stays marked, and
   ineligible replicas are tried again whenever a broker starts, so a broker that was down when
   the topic was deleted deletes its logs when it comes back.

A new controller starts every marked deletion again (replica states live in the active
controller only, as in Kafka). Runs on the controller's metadata thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from kcli.broker.controller.replica_state import ReplicaState
from kcli.broker.controller.request_batch import EPOCH_DURING_DELETE, LEADER_DURING_DELETE, TopicPartitionState
from kcli.errors import ErrorCode, KafkaError
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import BadVersionError, DeleteOp, NoNodeError

log = logging.getLogger("kcli.broker.controller")

Replica = tuple[str, int, int]  # topic, partition, broker


class TopicDeletionManager:
    def __init__(self, controller: Any) -> None:
        self.controller = controller
        self.topics_to_delete: set[str] = set()
        self.replica_states: dict[Replica, ReplicaState] = {}
        self._announced: set[str] = set()

    def reset(self) -> None:
        """A new controller term: nothing is in progress."""
        self.topics_to_delete.clear()
        self.replica_states.clear()
        self._announced.clear()

    def enqueue(self, names: Iterable[str]) -> None:
        for name in names:
            if name not in self.topics_to_delete:
                log.info("[Topic Deletion Manager %d] Handling deletion for topic %s", self.controller.broker_id, name)
                self.topics_to_delete.add(name)
        self.resume()

    def on_broker_startup(self, started: Iterable[int]) -> None:
        """Ineligible replicas on brokers that just started are tried again."""
        started = set(started)
        for replica, state in list(self.replica_states.items()):
            if replica[2] in started and state is not ReplicaState.REPLICA_DELETION_SUCCESSFUL:
                self.replica_states[replica] = ReplicaState.OFFLINE_REPLICA
        self.resume()

    def on_broker_failure(self, failed: Iterable[int]) -> None:
        failed = set(failed)
        for replica, state in list(self.replica_states.items()):
            if replica[2] in failed and state is ReplicaState.REPLICA_DELETION_STARTED:
                self.replica_states[replica] = ReplicaState.REPLICA_DELETION_INELIGIBLE
        self.resume()

    # -- the steps --------------------------------------------------------------------------------

    def resume(self) -> None:
        for name in sorted(self.topics_to_delete):
            self._advance(name)

    def _advance(self, name: str) -> None:
        controller = self.controller
        # A topic gone, or whose znodes cannot be read (written by hand), is removed outright.
        topic = controller.load_topic_or_none(name) if controller.zk_client.topic_exists(name) else None
        if topic is None:
            self._complete(name)
            return
        replicas = [(name, index, broker) for index, state in topic.partitions.items() for broker in state.replicas]
        states = [self.replica_states.get(replica) for replica in replicas]
        if replicas and all(state is ReplicaState.REPLICA_DELETION_SUCCESSFUL for state in states):
            self._complete(name)
            return
        if name not in self._announced:
            self._announced.add(name)
            deleting = [
                TopicPartitionState(name, topic.topic_id, index, replace(state, leader=LEADER_DURING_DELETE))
                for index, state in sorted(topic.partitions.items())
            ]
            controller.batch.add_update_metadata(controller.live_brokers, deleting)
        for replica in replicas:
            state = self.replica_states.get(replica)
            if state is not None and state is not ReplicaState.OFFLINE_REPLICA:
                continue  # under way, done, or ineligible until its broker starts again
            _, index, broker = replica
            if broker in controller.live_brokers:
                self.replica_states[replica] = ReplicaState.REPLICA_DELETION_STARTED
                controller.batch.add_stop_replica(
                    [broker], name, index, delete=True, leader_epoch=EPOCH_DURING_DELETE, callback=self._on_stop_replica_answer
                )
            else:
                self.replica_states[replica] = ReplicaState.REPLICA_DELETION_INELIGIBLE
                log.info(
                    "[Topic Deletion Manager %d] Replica %s-%d on broker %d is ineligible for deletion: the broker is down",
                    controller.broker_id, name, index, broker,
                )
        if not replicas:
            self._complete(name)

    def _on_stop_replica_answer(self, broker: int, answer: Any) -> None:
        """A StopReplica answer, on the loop: its states change on the metadata thread."""
        results = {(p.topic_name, p.partition_index): int(p.error_code) for p in getattr(answer, "partition_errors", ())}
        error = int(getattr(answer, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR))
        self.controller.thread.submit(lambda: self._replicas_answered(broker, error, results))

    def _replicas_answered(self, broker: int, error: int, results: dict[tuple[str, int], int]) -> None:
        if not self.controller.active:
            return
        for replica, state in list(self.replica_states.items()):
            if replica[2] != broker or state is not ReplicaState.REPLICA_DELETION_STARTED:
                continue
            code = results.get((replica[0], replica[1]), error if error else ErrorCode.NONE)
            if code == ErrorCode.NONE and error == ErrorCode.NONE:
                self.replica_states[replica] = ReplicaState.REPLICA_DELETION_SUCCESSFUL
            else:
                log.warning(
                    "[Topic Deletion Manager %d] Deletion of replica %s-%d on broker %d failed with %s",
                    self.controller.broker_id, replica[0], replica[1], broker, ErrorCode.for_code(code or error).name,
                )
                self.replica_states[replica] = ReplicaState.REPLICA_DELETION_INELIGIBLE
        self.resume()
        self.controller.send_batch()

    def _complete(self, name: str) -> None:
        """Every replica deleted: the topic's znodes go (NonExistentReplica, NonExistentPartition)."""
        zk_client = self.controller.zk_client
        ops = zk_client.topic_deletion_ops(name) if zk_client.topic_exists(name) else []
        if not ops and zk_client.store.exists(zk.delete_topic_path(name)) is not None:
            ops = [DeleteOp(zk.delete_topic_path(name))]
        if ops:
            try:
                zk_client.store.multi(ops)
            except (NoNodeError, BadVersionError):
                return  # changed meanwhile: the next event tries again
            except KafkaError as e:
                log.warning("[Topic Deletion Manager %d] Could not remove topic %s: %s", self.controller.broker_id, name, e)
                return
        for replica in [r for r in self.replica_states if r[0] == name]:
            del self.replica_states[replica]
        self.topics_to_delete.discard(name)
        self._announced.discard(name)
        self.controller.forget_topic(name)
        log.info("[Topic Deletion Manager %d] Deletion of topic %s successfully completed", self.controller.broker_id, name)
