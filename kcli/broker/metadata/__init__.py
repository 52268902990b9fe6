"""Cluster metadata: a znode-shaped tree (embedded or ZooKeeper) and the model built on it.

``store`` defines the tree interface, ``embedded`` the single-process backend, ``zk_paths`` every
path and its JSON, ``topic_names`` Kafka's naming rules and ``cluster`` the model the broker uses.
"""
