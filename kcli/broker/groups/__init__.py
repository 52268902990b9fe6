"""The classic group coordinator: consumer groups, their rebalances and their committed offsets.

``partitioner`` maps a group to its ``__consumer_offsets`` partition; ``member`` and ``group``
are the classic group state machine (pure state, no I/O); ``offsets`` the committed offsets and
their expiry rule; ``group_metadata_manager`` the records of ``__consumer_offsets`` (writing batches,
replaying a partition: Kafka's GroupMetadataManager); ``coordinator`` the ``GroupCoordinator`` the handlers call, which owns every group of
the offsets partitions this broker leads, serialises each group's changes with one lock, and keeps
the members' deadlines as event-loop timers; ``hosting`` connects it to the broker (which
offsets partitions it leads, topic changes); ``wire`` holds the conversions the handlers share.
"""
