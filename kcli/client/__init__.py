"""kcli's asyncio Kafka client: connections, metadata, admin calls, producer and consumer.

Built on ``kcli.protocol``; the tools use it through ``sync.SyncRunner``. See
docs/architecture.md (Client).
"""
