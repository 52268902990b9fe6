"""The broker's side of admin requests (Kafka's ``ZkAdminManager``).

CreateTopics, CreatePartitions, DeleteTopics and the config requests write through the
``AdminZkClient`` on the metadata thread (never on the event loop) and answer with what they
wrote: after each write the metadata cache reads the topic again at once, whatever the latency of
the store's watches, so the request's answer and the next request on any connection see it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence

from kcli.broker.metadata_cache import MetadataCache
from kcli.errors import ErrorCode, KafkaError
from kcli.metadata.admin_zk_client import AdminZkClient
from kcli.metadata.store import NodeExistsError
from kcli.metadata.topics import TopicInfo


class ZkAdminManager:
    def __init__(self, admin_zk_client: AdminZkClient, metadata: MetadataCache, *, mark_deletions: bool = False, deletion_timeout: float = 30.0) -> None:
        self.mark_deletions = mark_deletions
        self.deletion_timeout = deletion_timeout
        self.admin_zk_client = admin_zk_client
        self.metadata = metadata
        self.thread = metadata.thread

    def _live_broker_ids(self) -> list[int]:
        """The brokers new replicas go to: the ones this broker's metadata cache holds alive, which
        are the controller's (Kafka's ZkAdminManager places on ``metadataCache.getAliveBrokers``)."""
        return sorted(self.metadata.alive_brokers())

    async def create_topic(self, name: str, *args, **kwargs) -> TopicInfo:
        """``AdminZkClient.create_topic``'s arguments; the topic as created."""
        kwargs.setdefault("live_brokers", self._live_broker_ids())
        topic = await self.thread.call(self.admin_zk_client.create_topic, name, *args, **kwargs)
        if kwargs.get("validate_only"):
            return topic
        return await self.metadata.refresh_topic_async(name) or topic

    async def create_partitions(
        self,
        name: str,
        new_total: int,
        assignment: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
        **kwargs,
    ) -> TopicInfo:
        """``AdminZkClient.create_partitions``'s arguments; the topic as grown."""
        kwargs.setdefault("live_brokers", self._live_broker_ids())
        grown = await self.thread.call(
            self.admin_zk_client.create_partitions,
            self.metadata.topic(name), name, new_total, assignment, validate_only=validate_only, **kwargs,
        )
        if validate_only:
            return grown
        return await self.metadata.refresh_topic_async(name) or grown

    async def delete_topic(self, name: str | None = None, topic_id: uuid.UUID | None = None) -> TopicInfo:
        """Delete the topic named, or with ``topic_id``; the topic as it was.

        In cluster mode the topic is marked for the controller (``/admin/delete_topics``), which
        deletes it through the brokers, and the answer waits until this broker's cache no longer
        has it (Kafka's DelayedDeleteTopics), within ``timeout`` seconds (REQUEST_TIMED_OUT past it:
        the deletion goes on). Otherwise it is deleted at once."""
        topic = self.metadata.find_topic(name, topic_id)
        if not self.mark_deletions:
            await self.thread.call(self.admin_zk_client.delete_topic, topic)
            await self.metadata.refresh_topic_async(topic.name)
            return topic
        gone = asyncio.get_running_loop().create_future()

        def on_change(change) -> None:
            if change.name == topic.name and change.topic is None and not gone.done():
                gone.set_result(None)

        remove = self.metadata.on_topic_change(on_change)
        try:
            try:
                await self.thread.call(self.admin_zk_client.zk_mark_for_deletion, topic.name)
            except NodeExistsError:
                pass  # marked already: its deletion is under way
            if self.metadata.topic(topic.name) is not None:
                try:
                    await asyncio.wait_for(gone, self.deletion_timeout)
                except TimeoutError:
                    raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"Topic {topic.name} is marked for deletion; its deletion is not complete yet.") from None
        finally:
            remove()
        return topic

    async def set_topic_configs(self, name: str, configs: Mapping[str, str], **kwargs) -> TopicInfo | None:
        await self.thread.call(self.admin_zk_client.set_topic_configs, name, configs, **kwargs)
        return await self.metadata.refresh_topic_async(name)

    async def set_broker_configs(self, broker_id: int | None, configs: Mapping[str, str]) -> None:
        await self.thread.call(self.admin_zk_client.set_broker_configs, broker_id, configs)
        await self.metadata.refresh_broker_configs_async()
