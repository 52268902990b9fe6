"""Cluster metadata as ZooKeeper-era Kafka keeps it: a tree of znodes, and what is written in it.

``store`` defines the tree interface (ZooKeeper's semantics), ``embedded`` the single-process
backend (in memory, one file), ``zookeeper`` the backend of a real ZooKeeper ensemble through
kazoo, ``zk_paths`` every znode path and its JSON, ``topic_names`` Kafka's topic naming rules.
Brokers and tools share this package; it imports nothing from either.
"""
