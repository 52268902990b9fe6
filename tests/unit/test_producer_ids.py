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


class QueuedThread:
    """A metadata thread whose work waits until the test runs it."""

    def __init__(self) -> None:
        self.queued = []

    def submit(self, fn) -> None:
        self.queued.append(fn)

    def run_all(self) -> None:
        while self.queued:
            self.queued.pop(0)()


def test_blocks_are_claimed_off_the_callers_thread_and_ahead_of_need(tmp_path):
    import pytest

    from kcli.errors import ErrorCode, KafkaError
    from kcli.broker.producer_ids import PREFETCH_LEFT

    store = EmbeddedStore(tmp_path)
    thread = QueuedThread()
    manager = ProducerIdManager(store, 0, thread)
    # No block yet: the caller is told to retry, and the claim waits for the metadata thread.
    with pytest.raises(KafkaError) as caught:
        manager.generate()
    assert caught.value.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert store.exists(zk_paths.PRODUCER_ID_BLOCK) is None
    assert len(thread.queued) == 1
    thread.run_all()
    ids = [manager.generate() for _ in range(BLOCK_SIZE - PREFETCH_LEFT)]
    assert ids == list(range(BLOCK_SIZE - PREFETCH_LEFT))
    # A tenth of the block left: the next block is being claimed before it is needed ...
    assert len(thread.queued) == 1
    thread.run_all()
    # ... so the first id past the block is served at once.
    rest = [manager.generate() for _ in range(PREFETCH_LEFT + 1)]
    assert rest[-1] == BLOCK_SIZE and not thread.queued
    store.close()
