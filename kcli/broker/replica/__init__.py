"""Replicas and the data path: the replica manager, its partitions, the purgatory of delayed
produce and fetch requests, and the fetch sessions."""
