"""The work of ``kcli transactions`` (Kafka 3.9's TransactionsCommand): each subcommand's calls
through ``kcli.client.transaction_admin`` and its table, printed as Kafka's ``prettyPrintTable``
prints it. Rows come in the order Kafka's Java collections give them (hash maps and sets of
producer ids, partitions and broker ids), so the lines match Kafka's line for line.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import typer

from kcli.errors import ErrorCode, KcliError, UsageError
from kcli.java_compat import hash_map_order, long_hash, topic_partition_hash
from kcli.output import Format, Output

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = (
    "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState", "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions",
)
PRODUCERS_HEADERS = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset")
HANGING_HEADERS = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset", "LastTimestamp", "Duration(min)")
MAX_BATCH_SIZE = 500  # partitions (and topics) per DescribeProducers (DescribeTopics) round, as Kafka
DEBUG_HINT = "Enable debug logging for additional detail."


class CommandFailed(KcliError):
    """Kafka's printErrorAndExit: the message is the whole stderr line."""


def failed(message: str, cause: BaseException | None = None) -> CommandFailed:
    if cause is None:
        return CommandFailed(message)
    return CommandFailed(f"{message}: {cause}. {DEBUG_HINT}")


def run(command: str, bootstrap_server: str | None, command_config: str | None, fmt: Format, args: dict[str, Any]) -> None:
    """Run one subcommand; its failure is one line on stderr and exit 1 (2 for a wrong command line)."""
    out = Output(fmt)
    try:
        try:
            if bootstrap_server is None:
                raise UsageError("argument --bootstrap-server is required")
            _require(command, args)
            from kcli.tools._admin_common import client_settings, load_command_config

            try:
                props = load_command_config(command_config)
            except (OSError, KcliError) as exc:
                raise failed("Failed to load admin client properties", exc) from None
            settings = client_settings(props, bootstrap=bootstrap_server, client_id="kafka-transactions", warn=out.diag)
            with _Session(settings) as session:
                COMMANDS[command](session, out, **args)
        except KcliError as exc:
            out.diag(str(exc))
            raise typer.Exit(exc.exit_code) from None
    finally:
        out.flush()


_REQUIRED = {
    "describe": ("transactional_id",),
    "describe-producers": ("topic", "partition"),
    "abort": ("topic", "partition"),
}


def _require(command: str, args: dict[str, Any]) -> None:
    for name in _REQUIRED.get(command, ()):
        if args[name] is None:
            raise UsageError(f"argument --{name.replace('_', '-')} is required")


class _Session:
    """A cluster connection, its admin calls and a private event loop for the blocking tool.

    The connection opens at the first admin call, inside the subcommand, so that a broker that
    cannot be reached fails with the subcommand's own line ("Failed to list transactions: ..."),
    as the admin call's failure does in Kafka's tool."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self._admin_session: Any = None

    def __enter__(self) -> _Session:
        return self

    def _opened(self) -> Any:
        if self._admin_session is None:
            from kcli.client.transaction_admin import TransactionAdmin
            from kcli.tools._admin_common import AdminSession

            self._admin_session = AdminSession(self.settings).__enter__()
            self._transactions = TransactionAdmin(self._admin_session.cluster)
        return self._admin_session

    @property
    def admin(self) -> Any:
        return self._opened().admin

    @property
    def transactions(self) -> Any:
        self._opened()
        return self._transactions

    def run(self, coroutine: Any) -> Any:
        return self._opened().run(coroutine)

    def __exit__(self, *exc: object) -> None:
        if self._admin_session is not None:
            self._admin_session.__exit__(*exc)


# -- printing ----------------------------------------------------------------------------------------


def print_table(out: Output, headers: Sequence[str], rows: list[list[Any]]) -> None:
    """Kafka's ToolsUtils.prettyPrintTable: every cell padded to its column's width, then a tab;
    ``None`` cells print as ``None``. With --output json, one object per row instead."""
    if out.json:
        for row in rows:
            out.obj(dict(zip(headers, row)))
        return
    texts = [list(headers)] + [["None" if cell is None else str(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in texts) for i in range(len(headers))]
    plain = ["".join(cell.ljust(width) + "\t" for cell, width in zip(row, widths)) for row in texts]
    out.table(list(headers), texts[1:], plain, leading_blank=False)


def _whole_minutes(millis: int) -> int:
    """TimeUnit.MILLISECONDS.toMinutes: Java's division, truncating toward zero."""
    minutes = abs(millis) // 60_000
    return -minutes if millis < 0 else minutes


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# -- the subcommands ---------------------------------------------------------------------------------


def list_transactions(session: _Session, out: Output, *, duration_filter: int | None) -> None:
    try:
        by_broker = session.run(session.transactions.list_transactions(duration_ms=duration_filter))
    except KcliError as exc:
        raise failed("Failed to list transactions", exc) from None
    rows = [
        [listing.transactional_id, broker, listing.producer_id, listing.state]
        for broker in hash_map_order(by_broker, hash_of=lambda b: b)  # Kafka's HashMap<Integer, ...>
        for listing in by_broker[broker]
    ]
    print_table(out, LIST_HEADERS, rows)


def describe_transaction(session: _Session, out: Output, *, transactional_id: str) -> None:
    result = session.run(session.transactions.describe_transactions([transactional_id]))[transactional_id]
    if isinstance(result, KcliError):
        raise failed(f"Failed to describe transaction state of transactional-id `{transactional_id}`", result)
    start = result.transaction_start_time_ms
    partitions = hash_map_order(result.topic_partitions, hash_of=lambda tp: topic_partition_hash(tp.topic, tp.partition))  # a HashSet
    row = [
        result.coordinator_id, transactional_id, result.producer_id, result.producer_epoch, result.state,
        result.transaction_timeout_ms, start, None if start is None else _now_ms() - start,
        ",".join(str(tp) for tp in partitions),
    ]
    print_table(out, DESCRIBE_HEADERS, [row])


def describe_producers(session: _Session, out: Output, *, broker_id: int | None, topic: str, partition: int) -> None:
    from kcli.common import TopicPartition

    tp = TopicPartition(topic, partition)
    result = session.run(session.transactions.describe_producers([tp], broker_id=broker_id))[tp]
    if isinstance(result, KcliError):
        where = f"broker {broker_id}" if broker_id is not None else "leader"
        raise failed(f"Failed to describe producers for partition {tp} on {where}", result)
    rows = [
        [p.producer_id, p.producer_epoch, -1 if p.coordinator_epoch is None else p.coordinator_epoch, p.last_sequence,
         p.last_timestamp, p.current_transaction_start_offset]
        for p in result
    ]
    print_table(out, PRODUCERS_HEADERS, rows)


def abort_transaction(
    session: _Session, out: Output, *, topic: str, partition: int, start_offset: int | None, producer_id: int | None,
    producer_epoch: int | None, coordinator_epoch: int | None,
) -> None:
    from kcli.client.transaction_admin import AbortTransactionSpec
    from kcli.common import TopicPartition

    tp = TopicPartition(topic, partition)
    if start_offset is None and producer_id is None:
        raise failed(
            "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or with "
            "--producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)"
        )
    if start_offset is None:
        if producer_epoch is None:
            raise failed("Missing required argument --producer-epoch")
        if coordinator_epoch is None:
            raise failed("Missing required argument --coordinator-epoch")
        # A transaction hanging before its producer's first marker shows coordinator epoch -1;
        # 0 is at most any coordinator epoch, as Kafka's tool reasons.
        spec = AbortTransactionSpec(tp, producer_id, producer_epoch, max(coordinator_epoch, 0))
    else:
        result = session.run(session.transactions.describe_producers([tp]))[tp]
        if isinstance(result, KcliError):
            raise failed(f"Failed to validate producer state for partition {tp}", result)
        found = next((p for p in result if p.current_transaction_start_offset == start_offset), None)
        if found is None:
            raise failed(f"Could not find any open transactions starting at offset {start_offset} on partition {tp}")
        spec = AbortTransactionSpec(tp, found.producer_id, found.producer_epoch, found.coordinator_epoch or 0)
    try:
        session.run(session.transactions.abort_transaction(spec))
    except KcliError as exc:
        raise failed(f"Failed to abort transaction {spec}", exc) from None


def find_hanging(
    session: _Session, out: Output, *, broker_id: int | None, max_transaction_timeout: int, topic: str | None, partition: int | None,
) -> None:
    if topic is None and broker_id is None:
        raise failed("The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search")
    if partition is not None and topic is None:
        raise failed("The --partition argument requires --topic to be provided")
    max_timeout_ms = max_transaction_timeout * 60_000
    partitions = _partitions_to_search(session, topic, partition, broker_id)
    candidates = _open_transactions(session, broker_id, max_timeout_ms, partitions)
    hanging = _hanging(session, candidates) if candidates else []
    now = _now_ms()
    rows = [
        [tp.topic, tp.partition, p.producer_id, p.producer_epoch, -1 if p.coordinator_epoch is None else p.coordinator_epoch,
         p.current_transaction_start_offset, p.last_timestamp, _whole_minutes(now - p.last_timestamp)]
        for tp, p in hanging
    ]
    print_table(out, HANGING_HEADERS, rows)


def _partitions_to_search(session: _Session, topic: str | None, partition: int | None, broker_id: int | None) -> list:
    from kcli.common import TopicPartition

    if topic is not None and partition is not None:
        return [TopicPartition(topic, partition)]
    if topic is not None:
        topics = [topic]
    else:
        try:
            topics = list(session.run(session.admin.list_topics(include_internal=False)))
        except KcliError as exc:
            raise failed("Failed to list topics", exc) from None
    found = []
    for start in range(0, len(topics), MAX_BATCH_SIZE):
        batch = topics[start:start + MAX_BATCH_SIZE]
        try:
            described = session.run(session.admin.describe_topics(batch))
        except KcliError as exc:
            raise failed(f"Failed to describe {len(batch)} topics", exc) from None
        for name in batch:
            info = described[name]
            if isinstance(info, KcliError):
                raise failed(f"Failed to describe {len(batch)} topics", info)
            found += [
                TopicPartition(name, index) for index, p in sorted(info.partitions.items())
                if broker_id is None or broker_id in p.replicas
            ]
    return found


def _open_transactions(session: _Session, broker_id: int | None, max_timeout_ms: int, partitions: list) -> list:
    """(partition, producer) of each transaction open longer than ``max_timeout_ms``, in the
    order Kafka's DescribeProducersResult.all() map gives them."""
    candidates = []
    for start in range(0, len(partitions), MAX_BATCH_SIZE):
        batch = partitions[start:start + MAX_BATCH_SIZE]
        results = session.run(session.transactions.describe_producers(batch, broker_id=broker_id))
        error = next((r for r in results.values() if isinstance(r, KcliError)), None)
        if error is not None:
            java_optional = "Optional.empty" if broker_id is None else f"Optional[{broker_id}]"
            raise failed(f"Failed to describe producers for {len(batch)} partitions on broker {java_optional}", error)
        now = _now_ms()
        order = hash_map_order(batch, hash_of=lambda tp: topic_partition_hash(tp.topic, tp.partition), initial_capacity=len(batch))
        for tp in order:
            for producer in results[tp]:
                if producer.current_transaction_start_offset is not None and now - producer.last_timestamp > max_timeout_ms:
                    candidates.append((tp, producer))
    return candidates


def _hanging(session: _Session, candidates: list) -> list:
    """Kafka's filterHangingTransactions: an open transaction is hanging when no transactional
    id owns its producer id, or its id's transaction does not include the partition."""
    by_producer: dict[int, list] = {}
    for tp, producer in candidates:
        by_producer.setdefault(producer.producer_id, []).append((tp, producer))
    try:
        by_broker = session.run(session.transactions.list_transactions(producer_ids=list(by_producer)))
    except KcliError as exc:
        raise failed(f"Failed to list transactions for {len(by_producer)} producers", exc) from None
    ids = {listing.producer_id: listing.transactional_id for listings in by_broker.values() for listing in listings if listing.producer_id in by_producer}
    descriptions = session.run(session.transactions.describe_transactions(ids.values()))
    for result in descriptions.values():
        if isinstance(result, KcliError) and result.error_code is not ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            raise failed(f"Failed to describe {len(ids)} transactions", result)
    hanging = []
    for producer_id in hash_map_order(by_producer, hash_of=long_hash):
        transactional_id = ids.get(producer_id)
        description = descriptions.get(transactional_id) if transactional_id is not None else None
        for tp, producer in by_producer[producer_id]:
            if description is None or isinstance(description, KcliError) or tp not in description.topic_partitions:
                hanging.append((tp, producer))
    return hanging


COMMANDS = {
    "list": list_transactions,
    "describe": describe_transaction,
    "describe-producers": describe_producers,
    "abort": abort_transaction,
    "find-hanging": find_hanging,
}
