"""Topic deletion through the brokers: Kafka's TopicDeletionManager.

A topic marked under ``/admin/delete_topics`` (by DeleteTopics on any broker, or a ZooKeeper-era
tool) is deleted by the active controller in steps:

1. every live broker is sent UpdateMetadata with the topic's partitions led by -2
   (LeaderDuringDelete): they stop serving it;
2. each replica goes OfflineReplica; one on a live broker then moves to ReplicaDeletionStarted
   and its broker is sent StopReplica with ``delete_partition`` (leader epoch -2,
   EpochDuringDelete); one on a broker that is down is ReplicaDeletionIneligible;
3. an answer without error makes the replica ReplicaDeletionSuccessful, an error
   ReplicaDeletionIneligible;
4. once every replica is ReplicaDeletionSuccessful the topic's znodes go (its partitions,
   assignment, config and mark): the deletion is complete. Until then the topic stays marked, and
   ineligible replicas go OfflineReplica and are tried again whenever their broker starts, so a
   broker that was down when the topic was deleted deletes its logs when it comes back.

The replica states are the controller's ``ReplicaStateMachine``, which lives in the active
controller only, as in Kafka: a new controller starts every marked deletion again. Runs on the
controller's metadata thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from kcli.broker.controller.replica_state import Replica, ReplicaState
from kcli.broker.controller.request_batch import EPOCH_DURING_DELETE, LEADER_DURING_DELETE
from kcli.metadata.topics import TopicPartitionState
from kcli.errors import ErrorCode, KafkaError
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import BadVersionError, DeleteOp, NoNodeError

log = logging.getLogger("kcli.broker.controller")


class TopicDeletionManager:
    def __init__(self, controller: Any) -> None:
        self.controller = controller
        self.topics_to_delete: set[str] = set()
        self._announced: set[str] = set()

    def reset(self) -> None:
        """A new controller term: nothing is in progress."""
        self.topics_to_delete.clear()
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
        machine = self.controller.replica_states
        for name in self.topics_to_delete:
            ineligible = [r for r in machine.replicas_in_state(ReplicaState.REPLICA_DELETION_INELIGIBLE, name) if r[2] in started]
            machine.transition(ineligible, ReplicaState.OFFLINE_REPLICA)
        self.resume()

    def on_broker_failure(self, failed: Iterable[int]) -> None:
        failed = set(failed)
        machine = self.controller.replica_states
        for name in self.topics_to_delete:
            started = [r for r in machine.replicas_in_state(ReplicaState.REPLICA_DELETION_STARTED, name) if r[2] in failed]
            machine.transition(started, ReplicaState.REPLICA_DELETION_INELIGIBLE)
        self.resume()

    # -- the steps --------------------------------------------------------------------------------

    def resume(self) -> None:
        for name in sorted(self.topics_to_delete):
            self._advance(name)

    def _advance(self, name: str) -> None:
        controller = self.controller
        context = controller.context
        machine = controller.replica_states
        # A topic gone, or whose znodes cannot be read (written by hand), is removed outright.
        if name not in context.assignments:
            self._complete(name)
            return
        replicas: list[Replica] = [(*key, broker) for key in context.partitions(name) for broker in context.replicas(key)]
        if not replicas or all(machine.state(r) is ReplicaState.REPLICA_DELETION_SUCCESSFUL for r in replicas):
            self._complete(name)
            return
        if name not in self._announced:
            self._announced.add(name)
            deleting = [
                TopicPartitionState(name, p.topic_id, p.index, replace(p.state, leader=LEADER_DURING_DELETE))
                for p in (context.partition_state(key) for key in context.partitions(name))
            ]
            controller.batch.add_update_metadata(controller.live_brokers, deleting)
        # Under way, done, or ineligible until its broker starts again: left as they are.
        machine.transition(
            [r for r in replicas if machine.state(r) in (ReplicaState.NEW_REPLICA, ReplicaState.ONLINE_REPLICA)],
            ReplicaState.OFFLINE_REPLICA,
        )
        offline = [r for r in replicas if machine.state(r) is ReplicaState.OFFLINE_REPLICA]
        live = [r for r in offline if r[2] in controller.live_brokers]
        for _, index, broker in machine.transition(live, ReplicaState.REPLICA_DELETION_STARTED):
            controller.batch.add_stop_replica(
                [broker], name, index, delete=True, leader_epoch=EPOCH_DURING_DELETE, callback=self._on_stop_replica_answer
            )
        for _, index, broker in machine.transition([r for r in offline if r not in live], ReplicaState.REPLICA_DELETION_INELIGIBLE):
            log.info(
                "[Topic Deletion Manager %d] Replica %s-%d on broker %d is ineligible for deletion: the broker is down",
                controller.broker_id, name, index, broker,
            )

    def _on_stop_replica_answer(self, broker: int, answer: Any) -> None:
        """A StopReplica answer, on the loop: its states change on the metadata thread."""
        results = {(p.topic_name, p.partition_index): int(p.error_code) for p in getattr(answer, "partition_errors", ())}
        error = int(getattr(answer, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR))
        self.controller.thread.submit(lambda: self._replicas_answered(broker, error, results))

    def _replicas_answered(self, broker: int, error: int, results: dict[tuple[str, int], int]) -> None:
        if not self.controller.active:
            return
        machine = self.controller.replica_states
        for replica in machine.replicas_in_state(ReplicaState.REPLICA_DELETION_STARTED):
            if replica[2] != broker:
                continue
            code = results.get((replica[0], replica[1]), error if error else ErrorCode.NONE)
            if code == ErrorCode.NONE and error == ErrorCode.NONE:
                machine.transition([replica], ReplicaState.REPLICA_DELETION_SUCCESSFUL)
            else:
                log.warning(
                    "[Topic Deletion Manager %d] Deletion of replica %s-%d on broker %d failed with %s",
                    self.controller.broker_id, replica[0], replica[1], broker, ErrorCode.for_code(code or error).name,
                )
                machine.transition([replica], ReplicaState.REPLICA_DELETION_INELIGIBLE)
        self.controller.run_event(self.resume, "TopicDeletionStopReplicaResult")
        self.controller.send_batch()

    def _complete(self, name: str) -> None:
        """Every replica deleted (NonExistentReplica): the topic's znodes go, in one transaction
        with the controller's epoch check, and its partitions become NonExistentPartition."""
        controller = self.controller
        zk_client = controller.zk_client
        ops = zk_client.topic_deletion_ops(name) if zk_client.topic_exists(name) else []
        if not ops and zk_client.store.exists(zk.delete_topic_path(name)) is not None:
            ops = [DeleteOp(zk.delete_topic_path(name))]
        if ops:
            try:
                controller.multi(ops)
            except (NoNodeError, BadVersionError):
                return  # changed meanwhile: the next event tries again
            except KafkaError as e:
                log.warning("[Topic Deletion Manager %d] Could not remove topic %s: %s", controller.broker_id, name, e)
                return
        machine = controller.replica_states
        machine.transition(machine.replicas_in_state(ReplicaState.REPLICA_DELETION_SUCCESSFUL, name), ReplicaState.NON_EXISTENT_REPLICA)
        self.topics_to_delete.discard(name)
        self._announced.discard(name)
        controller.forget_topic(name)
        log.info("[Topic Deletion Manager %d] Deletion of topic %s successfully completed", controller.broker_id, name)
