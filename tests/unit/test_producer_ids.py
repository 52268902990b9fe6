"""Producer ids handed out in blocks claimed from the metadata tree."""

from __future__ import annotations

from kcli.metadata import zk_paths
from kcli.metadata.embedded import EmbeddedStore
from kcli.broker.producer_ids import BLOCK_SIZE, ProducerIdManager


def test_ids_are_unique_across_brokers_and_restarts(tmp_path):
    store = EmbeddedStore(tmp_path)
    store.ensure_path(zk_paths.PRODUCER_ID_BLOCK)  # created empty, as a broker does at start-up
    first, second = ProducerIdManager(store, 0), ProducerIdManager(store, 1)
    ids = [first.generate() for _ in range(BLOCK_SIZE + 5)] + [second.generate() for _ in range(10)]
    assert ids[:3] == [0, 1, 2]
    assert len(set(ids)) == len(ids)
    store.close()

    reopened = EmbeddedStore(tmp_path)
    after_restart = ProducerIdManager(reopened, 0).generate()
    assert after_restart > max(ids)
    block = zk_paths.decode_producer_id_block(reopened.get(zk_paths.PRODUCER_ID_BLOCK)[0])
    assert (block.broker, block.block_start, block.block_end) == (0, after_restart, after_restart + BLOCK_SIZE - 1)
