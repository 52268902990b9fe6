"""The ZooKeeper session a ZooKeeper-side tool opens on a Kafka cluster (topics --zookeeper,
cluster status, consumer-offsets, consumer-groups --zookeeper, consumer-offset-checker).

One way for all of them: the connect string read by ``kcli.metadata.zk_connect`` (one line for
a malformed one), kazoo's own log records kept to DEBUG (the tool prints its one line when the
ensemble cannot be reached, not a warning per refused attempt), and a chroot that must exist
already: brokers create it, a tool never does (a typo must not leave an empty chroot behind).
"""

from __future__ import annotations

from kcli.errors import KcliError
from kcli.metadata.zookeeper import ZooKeeperStore, split_connect


def open_cluster_store(connect: str, *, session_timeout_ms: int, connection_timeout_ms: int) -> ZooKeeperStore:
    """A started session on ``connect``; ``KcliError`` (one line) when it cannot be had."""
    hosts, chroot = split_connect(connect)
    settings = {"session_timeout_ms": session_timeout_ms, "connection_timeout_ms": connection_timeout_ms,
                "client_logs_at_debug": True}
    if chroot is not None:
        bare = ZooKeeperStore(hosts, **settings).start()
        try:
            missing = bare.exists(chroot) is None
        finally:
            bare.close()
        if missing:
            raise KcliError(f"ZooKeeper at {hosts} has no {chroot}: no Kafka cluster uses the chroot of {connect}")
    return ZooKeeperStore(connect, **settings).start()
