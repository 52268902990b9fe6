"""The transaction coordinator: transactional ids, their producer ids and epochs, their transactions.

``metadata`` is one transactional id's state and Kafka's state machine (pure state, no I/O);
``transaction_state_manager`` the records of ``__transaction_state`` (written one per state change,
replayed at load: Kafka's TransactionStateManager); ``markers`` the COMMIT/ABORT control batches written to the partitions of a transaction;
``coordinator`` the ``TransactionCoordinator`` the handlers call, which owns every transactional
id of the ``__transaction_state`` partitions this broker leads and changes each one in a single
synchronous step on the event loop; ``hosting`` connects it to the broker (topic creation,
loading, the periodic abort of timed-out transactions).
"""
