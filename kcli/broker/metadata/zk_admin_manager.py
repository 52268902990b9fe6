"""The broker's side of admin requests (Kafka's ``ZkAdminManager``).

CreateTopics, CreatePartitions, DeleteTopics and the config requests write through the
``AdminZkClient`` on the metadata thread (never on the event loop) and answer with what they
wrote: after each write the metadata cache reads the topic again at once, whatever the latency of
the store's watches, so the request's answer and the next request on any connection see it. New
partitions are written as assignments; the controller elects their leaders, and CreateTopics and
CreatePartitions wait for that within their timeout (Kafka's DelayedCreatePartitions).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence

from kcli.broker.metadata.metadata_cache import MetadataCache
from kcli.errors import ErrorCode, KafkaError
from kcli.metadata.admin_zk_client import AdminZkClient
from kcli.metadata.store import NodeExistsError
from kcli.metadata.topics import TopicInfo
from kcli.metadata.zk_paths import NO_LEADER


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

    async def create_topic(self, name: str, *args, timeout_ms: int = 0, **kwargs) -> TopicInfo:
        """``AdminZkClient.create_topic``'s arguments; the topic as created. With ``timeout_ms``,
        the answer waits until the controller has elected every partition's leader."""
        kwargs.setdefault("live_brokers", self._live_broker_ids())
        topic = await self.thread.call(self.admin_zk_client.create_topic, name, *args, **kwargs)
        if kwargs.get("validate_only"):
            return topic
        created = await self.metadata.refresh_topic_async(name) or topic
        return await self._wait_for_leaders(name, created, set(topic.partitions), timeout_ms)

    async def create_partitions(
        self,
        name: str,
        new_total: int,
        assignment: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
        timeout_ms: int = 0,
        **kwargs,
    ) -> TopicInfo:
        """``AdminZkClient.create_partitions``'s arguments; the topic as grown. With
        ``timeout_ms``, the answer waits until the controller has elected the new partitions'
        leaders."""
        kwargs.setdefault("live_brokers", self._live_broker_ids())
        before = self.metadata.topic(name)
        grown = await self.thread.call(
            self.admin_zk_client.create_partitions, before, name, new_total, assignment, validate_only=validate_only, **kwargs,
        )
        if validate_only:
            return grown
        added = set(grown.partitions) - set(before.partitions if before is not None else ())
        refreshed = await self.metadata.refresh_topic_async(name) or grown
        return await self._wait_for_leaders(name, refreshed, added, timeout_ms)

    async def _wait_for_leaders(self, name: str, topic: TopicInfo, partitions: set[int], timeout_ms: int) -> TopicInfo:
        """Kafka's DelayedCreatePartitions: the admin path writes assignments only, so a new
        partition has a leader once the controller elected it and this broker's cache learnt it.
        Waits (``timeout_ms`` > 0) until every one of ``partitions`` has; REQUEST_TIMED_OUT past
        it (the topic exists; its leaders are still to come)."""
        if timeout_ms <= 0 or not partitions:
            return topic

        def led() -> TopicInfo | None:
            cached = self.metadata.topic(name)
            if cached is None or any(p not in cached.partitions or cached.partitions[p].leader == NO_LEADER for p in partitions):
                return None
            return cached

        found = led()
        if found is not None:
            return found
        elected = asyncio.get_running_loop().create_future()

        def on_change(change) -> None:
            if change.name == name and not elected.done() and (now := led()) is not None:
                elected.set_result(now)

        remove = self.metadata.on_topic_change(on_change)
        try:
            return await asyncio.wait_for(elected, timeout_ms / 1000)
        except TimeoutError:
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"Timed out waiting for the leaders of topic {name} to be elected.") from None
        finally:
            remove()

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
