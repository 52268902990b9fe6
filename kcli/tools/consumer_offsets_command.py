"""The work of ``kcli consumer-offsets``: consumer offsets between ZooKeeper and Kafka storage.

Two stores of the same thing (group -> topic-partition -> next offset to consume):

* ZooKeeper: the old consumer's ``/consumers/<group>/offsets/<topic>/<partition>`` nodes, read and
  written through ``kcli.metadata.zk_consumers`` (pipelined reads, one transaction per group);
* Kafka: the group coordinators' ``__consumer_offsets``, through OffsetFetch and OffsetCommit
  (one OffsetCommit per group, which the coordinator appends as one batch).

``export``/``import`` move offsets between a store and a file (``kcli.tools.offset_files``).
``migrate`` copies groups from one store to the other. Per group it plans first and writes only
when every check passed, as one batch:

* a group with live members (ZooKeeper ``ids`` nodes, or a Kafka group that is not Empty) is
  refused unless ``--force``;
* a partition whose znode is not a number, or whose topic or partition no longer exists, is
  reported and left out; the rest of the group is migrated and the exit code is 1;
* offsets are clamped to the log's range with Kafka's reset-offsets warnings;
* an offset is never moved backwards (a target offset larger than the source's stays) unless
  ``--allow-rewind``.

Without ``--execute`` nothing is written (the plan is printed). ``--verify`` compares both stores
partition by partition and prints the differences (exit 1 when there are any).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kcli.common import TopicPartition
from kcli.errors import EXIT_ERROR, KafkaError, KcliError, UsageError
from kcli.output import Output

ZOOKEEPER = "zookeeper"
KAFKA = "kafka"
STORES = (ZOOKEEPER, KAFKA)
MISSING = "-"
COMMAND_LOGGER = "kcli.tools.consumer_offsets"
DRY_RUN_NOTE = "WARN: No action will be performed as the --execute option is missing."


@dataclass
class Options:
    zookeeper: str | None = None
    bootstrap_server: str | None = None
    command_config: str | None = None
    groups: list[str] | None = None
    all_groups: bool = False
    timeout_ms: int = 30000


class Failed(Exception):
    """Some item failed and was reported; the command exits 1 after finishing the rest."""


class Stores:
    """The ZooKeeper session and the Kafka connection a command needs, opened on first use."""

    def __init__(self, o: Options, out: Output) -> None:
        self.o = o
        self.out = out
        self._zk = None
        self._zk_groups = None
        self._runner = None
        self._cluster = None
        self._group_admin = None
        self._admin = None

    # -- ZooKeeper --------------------------------------------------------------------------------

    @property
    def zk(self):
        if self._zk_groups is None:
            if not self.o.zookeeper:
                raise UsageError("Missing required option --zookeeper (the ZooKeeper connect string, host:port[/chroot])")
            from kcli.metadata.store import MetadataStoreError
            from kcli.metadata.zk_consumers import ZkConsumerGroups
            from kcli.tools.zk_session import open_cluster_store

            try:
                self._zk = open_cluster_store(self.o.zookeeper, session_timeout_ms=max(self.o.timeout_ms, 4000),
                                              connection_timeout_ms=self.o.timeout_ms)
            except MetadataStoreError as exc:
                raise KcliError(str(exc)) from None
            self._zk_groups = ZkConsumerGroups(self._zk)
        return self._zk_groups

    # -- Kafka ------------------------------------------------------------------------------------

    def run(self, coroutine):
        return self._runner.run(coroutine)

    @property
    def group_admin(self):
        if self._group_admin is None:
            if not self.o.bootstrap_server and not self.o.command_config:
                raise UsageError("Missing required option --bootstrap-server (the Kafka brokers, host:port)")
            from kcli.client.admin import Admin
            from kcli.client.group_admin import GroupAdmin
            from kcli.client.network_client import NetworkClient
            from kcli.client.sync import SyncRunner
            from kcli.tools._admin_common import client_settings, load_command_config

            settings = client_settings(load_command_config(self.o.command_config), bootstrap=self.o.bootstrap_server,
                                       client_id="kcli-consumer-offsets", warn=self.out.diag)
            self._runner = SyncRunner()
            self._cluster = NetworkClient(**settings)
            timeout = self.o.timeout_ms / 1000
            self.run(self._cluster.any_connection(timeout=timeout, timeout_setting="--timeout"))
            self._group_admin = GroupAdmin(self._cluster, timeout=timeout)
            self._admin = Admin(self._cluster, timeout_ms=self.o.timeout_ms)
        return self._group_admin

    @property
    def admin(self):
        self.group_admin
        return self._admin

    def close(self) -> None:
        if self._zk is not None:
            self._zk.close()
        if self._runner is not None:
            try:
                self.run(self._cluster.close())
            finally:
                self._runner.close()

    # -- one interface over both stores ---------------------------------------------------------

    def group_ids(self, store: str) -> list[str]:
        """The groups the command works on: --group, or with --all-groups every group of ``store``."""
        if not self.o.all_groups:
            return list(dict.fromkeys(self.o.groups or ()))
        if store == ZOOKEEPER:
            return self.zk.groups_with_offsets()
        return sorted(g.group_id for g in self.run(self.group_admin.list_groups()))

    def read(self, store: str, groups: list[str]) -> dict[str, tuple[dict[TopicPartition, int], list[tuple[str, str]]] | None]:
        """Each group's offsets and malformed entries in ``store``; None where it has none."""
        if store == ZOOKEEPER:
            return {g: (None if s is None else (s.offsets, s.malformed)) for g, s in self.zk.read_offsets(groups).items()}
        fetched = self.run(self.group_admin.fetch_offsets_of(groups)) if groups else {}
        return {g: ({tp: v.offset for tp, v in sorted(found.items())}, []) if found else None for g, found in fetched.items()}

    def live_members(self, store: str, groups: list[str]) -> dict[str, list[str]]:
        if not groups:
            return {}
        if store == ZOOKEEPER:
            return self.zk.members(groups)
        described = self.run(self.group_admin.describe_groups(groups))
        live = {}
        for group, result in described.items():
            if isinstance(result, KafkaError):
                raise result
            live[group] = [] if result.state in ("Empty", "Dead") else [m.member_id for m in result.members] or [result.state]
        return live

    def write(self, store: str, batches: Mapping[str, Mapping[TopicPartition, int]]) -> dict[str, KcliError | None]:
        """Each group's offsets in one batch (all of them or none); the groups are written
        concurrently. Returns each group's error, or None when it was written."""
        batches = {g: offsets for g, offsets in batches.items() if offsets}
        if store == ZOOKEEPER:
            return {g: self._write_zk(g, offsets) for g, offsets in batches.items()}
        if not batches:
            return {}
        self.group_admin  # connects
        return self.run(self._commit_all(batches))

    def _write_zk(self, group: str, offsets: Mapping[TopicPartition, int]) -> KcliError | None:
        from kcli.metadata.store import MetadataStoreError

        try:
            self.zk.write_offsets(group, offsets)
        except MetadataStoreError as exc:
            return KcliError(f"Writing the offsets of group '{group}' to ZooKeeper failed, nothing written: {exc}")
        return None

    async def _commit_all(self, batches: Mapping[str, Mapping[TopicPartition, int]]) -> dict[str, KcliError | None]:
        import asyncio

        from kcli.errors import ErrorCode

        limit = asyncio.Semaphore(32)

        async def one(group: str) -> KcliError | None:
            async with limit:
                try:
                    results = await self.group_admin.commit_offsets(group, batches[group])
                except KafkaError as exc:
                    return KcliError(f"Committing the offsets of group '{group}' to Kafka failed: {exc}")
            failed = sorted((tp, code) for tp, code in results.items() if code)
            if failed:
                tp, code = failed[0]
                return KcliError(f"Committing the offsets of group '{group}' to Kafka failed for {len(failed)} partition(s), "
                                 f"first {tp}: {ErrorCode.for_code(code).name}")
            return None

        groups = list(batches)
        return dict(zip(groups, await asyncio.gather(*(one(g) for g in groups))))

    def partitions_of(self, topics: Iterable[str]) -> dict[str, set[int] | None]:
        """Each topic's partitions in the cluster (None for a topic that does not exist)."""
        from kcli.errors import ErrorCode

        names = sorted(set(topics))
        if not names:
            return {}
        described = self.run(self.admin.describe_topics(names))
        found: dict[str, set[int] | None] = {}
        for name in names:
            info = described.get(name)
            if isinstance(info, KafkaError):
                if info.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    raise info
                found[name] = None
            else:
                found[name] = set(info.partitions) if info is not None else None
        return found

    def log_ranges(self, partitions: Iterable[TopicPartition]) -> tuple[dict[TopicPartition, int | None], dict[TopicPartition, int | None]]:
        from kcli.client.admin import EARLIEST, LATEST

        wanted = sorted(set(partitions))
        if not wanted:
            return {}, {}
        starts = self.run(self.group_admin.list_offsets(wanted, EARLIEST))
        ends = self.run(self.group_admin.list_offsets(wanted, LATEST))

        def known(listed):
            return {tp: (None if isinstance(r, KafkaError) else r.offset) for tp, r in listed.items()}

        return known(starts), known(ends)


def _log_warn(out: Output, message: str) -> None:
    out.log4j("WARN", message, COMMAND_LOGGER)


# -- export / import ------------------------------------------------------------------------------


def export(o: Options, source: str, fmt: str, output_file: str | None) -> int:
    from kcli.tools.offset_files import format_lines

    out = Output()
    # As ExportZkOffsets, the file is opened before ZooKeeper is asked: a path that cannot be
    # written fails at once, in one line (but a file's old content stays until the new is ready).
    target = None if output_file is None or output_file == "-" else _open_output(output_file)
    stores = Stores(o, out)
    ok = True
    try:
        groups = stores.group_ids(source) if (o.groups or o.all_groups) else (
            stores.zk.groups_with_offsets() if source == ZOOKEEPER else sorted(g.group_id for g in stores.run(stores.group_admin.list_groups())))
        offsets: dict[str, dict[TopicPartition, int]] = {}
        for group, read in stores.read(source, groups).items():
            if read is None and not o.groups:
                continue  # every group was asked for: one that never committed has nothing to export
            if read is None:
                out.diag(f"Error: Group '{group}' has no offsets stored in {source}")
                ok = False
                continue
            found, malformed = read
            for path, reason in malformed:
                out.diag(f"Error: Skipping {path}: {reason}")
                ok = False
            offsets[group] = found
    except BaseException:
        if target is not None:
            target.close()
        raise
    finally:
        stores.close()
    lines = format_lines(offsets, fmt)
    if target is None:
        out.lines(lines)
        out.flush()
    else:
        try:
            if os.path.isfile(output_file):
                target.truncate(0)
            target.write("".join(line + "\n" for line in lines))
            target.close()
        except OSError as exc:
            try:
                target.close()  # closed already when the failure came from close's flush
            except OSError:
                pass
            raise KcliError(f"Cannot write {output_file}: {exc.strerror or exc}") from None
    return 0 if ok else EXIT_ERROR


def _open_output(path: str):
    try:
        return open(path, "a", encoding="utf-8", newline="\n")
    except OSError as exc:
        raise KcliError(f"Cannot write {path}: {exc.strerror or exc}") from None


def import_(o: Options, target: str, fmt: str, input_file: str) -> int:
    from kcli.tools.offset_files import OffsetFileError, parse

    from kcli.input_files import LINE_RECORDS, read_text

    out = Output()
    text = read_text(input_file, "offsets file", LINE_RECORDS)
    try:
        offsets = parse(text, fmt, input_file)
    except OffsetFileError as exc:
        for problem in exc.problems:
            out.diag(f"Error: {input_file}: {problem}")
        raise KcliError(str(exc)) from None
    stores = Stores(o, out)
    ok = True
    try:
        for group, failure in sorted(stores.write(target, offsets).items()):
            if failure is not None:
                out.diag(f"Error: {failure}")
                ok = False
            else:
                out.line(f"Imported {len(offsets[group])} offset(s) of group '{group}' into {target}.")
    finally:
        out.flush()
        stores.close()
    return 0 if ok else EXIT_ERROR


# -- migrate --------------------------------------------------------------------------------------


@dataclass
class GroupPlan:
    group: str
    rows: list[tuple[TopicPartition, int | None, int]]  # partition, target's current offset, new offset

    @property
    def changes(self) -> dict[TopicPartition, int]:
        return {tp: new for tp, current, new in self.rows if current != new}


def migrate(o: Options, target: str, *, execute: bool, verify: bool, force: bool, allow_rewind: bool) -> int:
    source = ZOOKEEPER if target == KAFKA else KAFKA
    out = Output()
    stores = Stores(o, out)
    try:
        groups = stores.group_ids(source)
        if verify:
            return _verify(stores, out, source, groups)
        return _migrate(stores, out, source, target, groups, execute=execute, force=force, allow_rewind=allow_rewind)
    finally:
        out.flush()
        stores.close()


def _migrate(stores: Stores, out: Output, source: str, target: str, groups: list[str], *,
             execute: bool, force: bool, allow_rewind: bool) -> int:
    ok = True

    def error(message: str) -> None:
        nonlocal ok
        ok = False
        out.diag(f"Error: {message}")

    if not execute:
        out.diag(DRY_RUN_NOTE)
    # ZooKeeper is read on a thread while the brokers are asked: kazoo answers a few thousand
    # reads a second, and the brokers' answers mostly wait on the network meanwhile.
    with ThreadPoolExecutor(1) as pool:
        zk_work = pool.submit(lambda: (stores.read(ZOOKEEPER, groups), {} if force else stores.live_members(ZOOKEEPER, groups)))
        kafka_read, kafka_live = stores.read(KAFKA, groups), ({} if force else stores.live_members(KAFKA, groups))
        zk_read, zk_live = zk_work.result()
    sources, targets = (zk_read, kafka_read) if source == ZOOKEEPER else (kafka_read, zk_read)
    live = {g: zk_live.get(g, []) + kafka_live.get(g, []) for g in groups}
    wanted_topics = {tp.topic for read in sources.values() if read for tp in read[0]}
    partitions = stores.partitions_of(wanted_topics)
    checked: list[tuple[str, dict[TopicPartition, int], dict[TopicPartition, int]]] = []
    for group in migrated_groups(stores.o, groups, sources):
        read = sources[group]
        if read is None:
            where = f"; it has offsets in {target} only" if targets[group] is not None else ""
            error(f"Group '{group}' has no offsets stored in {source}{where}")
            continue
        if live[group]:
            error(f"Group '{group}' has live members ({', '.join(live[group])}): stop its consumers first, or use --force")
            continue
        offsets, malformed = read
        for path, reason in malformed:
            error(f"Skipping {path}: {reason}")
        current = targets[group][0] if targets[group] is not None else {}
        requested: dict[TopicPartition, int] = {}
        for tp, offset in offsets.items():
            known = partitions.get(tp.topic)
            if known is None:
                error(f"Skipping group '{group}' partition {tp}: topic {tp.topic} does not exist (deleted since the offset was stored?)")
            elif tp.partition not in known:
                error(f"Skipping group '{group}' partition {tp}: topic {tp.topic} has no partition {tp.partition}")
            else:
                requested[tp] = offset
        checked.append((group, requested, current))
    starts, ends = stores.log_ranges({tp for _, requested, _ in checked for tp in requested})
    plans = [_plan(out, group, requested, current, starts, ends, allow_rewind) for group, requested, current in checked]
    _print_plan(out, plans)
    if execute:
        changes = {plan.group: plan.changes for plan in plans}
        failures = stores.write(target, changes)
        for plan in plans:
            failure = failures.get(plan.group)
            if failure is not None:
                error(str(failure))
            else:
                out.diag(f"Migrated {len(changes[plan.group])} offset(s) of group '{plan.group}' to {target}.")
    return 0 if ok else EXIT_ERROR


def _plan(out: Output, group: str, requested: dict[TopicPartition, int], current: Mapping[TopicPartition, int],
          starts: Mapping[TopicPartition, int | None], ends: Mapping[TopicPartition, int | None], allow_rewind: bool) -> GroupPlan:
    from kcli.tools.consumer_groups_reset import clamp

    clamped, warnings = clamp(requested, starts, ends)
    for warning in warnings:
        _log_warn(out, warning)
    rows = []
    for tp in sorted(clamped):
        new = clamped[tp]
        now = current.get(tp)
        if now is not None and new < now and not allow_rewind:
            out.diag(f"Not moving group '{group}' partition {tp} back from {now} to {new} (use --allow-rewind to do so)")
            new = now
        rows.append((tp, now, new))
    return GroupPlan(group, rows)


def _print_plan(out: Output, plans: list[GroupPlan]) -> None:
    from kcli.tools.consumer_groups import pad_all

    headers = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"]
    rows = [[p.group, tp.topic, str(tp.partition), MISSING if cur is None else str(cur), str(new)] for p in plans for tp, cur, new in p.rows]
    if not rows:
        return
    widths = [max([15, len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    out.table(headers, rows, [pad_all(headers, widths)] + [pad_all(r, widths) for r in rows])


def migrated_groups(o: Options, groups: list[str], sources: Mapping[str, Any]) -> list[str]:
    """The groups migrate works on and --verify checks, from ``groups`` (``Stores.group_ids``)
    and their offsets in the source store: each --group as given; with --all-groups only those
    with offsets in the source (a group that never committed one, such as console-consumer's
    own, has nothing to migrate)."""
    if not o.all_groups:
        return groups
    return [group for group in groups if sources[group] is not None]


def _verify(stores: Stores, out: Output, source: str, groups: list[str]) -> int:
    from kcli.tools.consumer_groups import pad_all

    with ThreadPoolExecutor(1) as pool:
        zk_work = pool.submit(stores.read, ZOOKEEPER, groups)
        kafka_side = stores.read(KAFKA, groups)
        zk_side = zk_work.result()
    groups = migrated_groups(stores.o, groups, zk_side if source == ZOOKEEPER else kafka_side)
    ok = True
    rows: list[list[str]] = []
    for group in groups:
        z, k = zk_side[group], kafka_side[group]
        if z is None and k is None:
            continue  # no offsets on either side: in sync
        if z is None or k is None:
            out.diag(f"Group '{group}' has offsets in {'kafka' if z is None else 'zookeeper'} only")
            ok = False
        for path, reason in (z[1] if z else []):
            out.diag(f"Error: {path}: {reason}")
            ok = False
        zo = z[0] if z else {}
        ko = k[0] if k else {}
        for tp in sorted(set(zo) | set(ko)):
            if zo.get(tp) != ko.get(tp):
                rows.append([group, tp.topic, str(tp.partition), _text(zo.get(tp)), _text(ko.get(tp))])
    if rows:
        ok = False
        headers = ["GROUP", "TOPIC", "PARTITION", "ZOOKEEPER-OFFSET", "KAFKA-OFFSET"]
        widths = [max([15, len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
        out.table(headers, rows, [pad_all(headers, widths)] + [pad_all(r, widths) for r in rows])
    elif ok:
        out.line(f"The offsets of {len(groups)} group(s) are the same in zookeeper and kafka.")
    return 0 if ok else EXIT_ERROR


def _text(value: Any) -> str:
    return MISSING if value is None else str(value)
