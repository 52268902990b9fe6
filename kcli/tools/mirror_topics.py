"""The target topics of ``kcli mirror``, made before anything is copied, as MirrorMaker 2 makes
them (``MirrorSourceConnector.createNewTopics`` / ``createNewPartitions``).

For each source topic the mirror reads (its ``--topic`` names, or the topics ``--topic-pattern``
selects now), the target topic (``--topic-prefix`` + name) that is missing is created with the
source's partition count and the source's topic configs that MirrorMaker 2 replicates: those not
at their default, not read-only, not sensitive, not from the broker's static config, and not in
its ``config.properties.exclude`` default (``DefaultConfigPropertyFilter``). Its replication
factor is the target's ``default.replication.factor`` (MirrorMaker 2's own default, 2, would fail
on a one-broker target). A target topic with fewer partitions than its source is grown to the
source's count when records keep their partition. A topic the target refuses to create or grow
is one line naming it and what to do, before Spark starts; without this, the producer waited for
a topic that never came (or the target auto-created a one-partition topic).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kcli.client.admin import TOPIC, ConfigResource, ConfigSource, NewPartitions, NewTopic
from kcli.client.metadata import TopicInfo
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.spark.options import Subscription
from kcli.tools._admin_common import AdminSession, client_settings

# MirrorMaker 2's DefaultConfigPropertyFilter.CONFIG_PROPERTIES_EXCLUDE_DEFAULT (Kafka 3.9).
CONFIG_PROPERTIES_EXCLUDE = re.compile(
    r"follower\.replication\.throttled\.replicas|leader\.replication\.throttled\.replicas"
    r"|message\.timestamp\.difference\.max\.ms|message\.timestamp\.type"
    r"|unclean\.leader\.election\.enable|min\.insync\.replicas"
)


@dataclass(frozen=True)
class SourceTopic:
    name: str
    partitions: int
    configs: Mapping[str, str]


def replicated_configs(entries) -> dict[str, str]:
    """The topic configs MirrorMaker 2 copies to a topic it creates (``targetConfig`` with
    ``use.defaults.from=target``)."""
    return {
        entry.name: entry.value
        for entry in entries
        if not entry.is_default
        and not entry.read_only
        and not entry.sensitive
        and entry.source is not ConfigSource.STATIC_BROKER_CONFIG
        and entry.value is not None
        and CONFIG_PROPERTIES_EXCLUDE.fullmatch(entry.name) is None
    }


def read_source_topics(bootstrap: str, subscription: Subscription) -> list[SourceTopic]:
    """The source topics the mirror reads now, with their partition counts and replicable
    configs. A topic named with ``--topic`` that the source lacks is one line: the mirror would
    otherwise copy nothing and end as if it had succeeded."""
    with AdminSession(client_settings({}, bootstrap=bootstrap)) as session:
        if subscription.kind == "subscribe":
            names = list(subscription.topics)
        else:
            listed = session.run(session.admin.list_topics())
            names = sorted(name for name, info in listed.items() if subscription.selects_topic(name, internal=info.internal))
        described = session.run(session.admin.describe_topics(names))
        found = {name: info for name, info in described.items() if isinstance(info, TopicInfo)}
        if subscription.kind == "subscribe":
            for name in names:
                if name not in found:
                    raise KcliError(f"source topic {name} does not exist on {bootstrap}: {described.get(name, 'no answer')}")
        configs = session.run(session.admin.describe_configs([ConfigResource(TOPIC, name) for name in found]))
    chosen = []
    for name, info in found.items():
        result = configs.get(ConfigResource(TOPIC, name))
        if result is None or result.error is not None:
            raise KcliError(f"cannot read the configs of source topic {name} on {bootstrap}: {result.error if result else 'no answer'}")
        chosen.append(SourceTopic(name, len(info.partitions), replicated_configs(result.entries)))
    return chosen


def prepare_target_topics(
    bootstrap: str,
    props: Mapping[str, str],
    sources: list[SourceTopic],
    prefix: str,
    keep_partitions: bool,
    report: Callable[[str], None],
) -> None:
    """Create each missing target topic (grow one with too few partitions when records keep
    their partition), reporting each change in one line; raise one line for a refusal."""
    wanted = {prefix + source.name: source for source in sources}
    with AdminSession(client_settings(props, bootstrap=bootstrap, warn=lambda _line: None)) as session:
        existing = session.run(session.admin.describe_topics(list(wanted)))
        missing = []
        grow = {}
        for name, source in wanted.items():
            info = existing.get(name)
            if isinstance(info, KafkaError) or info is None:
                # Unknown (or a name the target cannot describe): creating it says why not.
                missing.append(NewTopic(name, source.partitions, -1, configs=dict(source.configs)))
            elif keep_partitions and len(info.partitions) < source.partitions:
                grow[name] = NewPartitions(source.partitions)
        created = session.run(session.admin.create_topics(missing)) if missing else {}
        for topic in missing:
            error = created[topic.name].error
            if error is not None and error.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise KcliError(
                    f"cannot create target topic {topic.name} on {bootstrap}: {error}; create it there with "
                    f"{topic.num_partitions} partition(s) and run the mirror again"
                )
            if error is None:
                report(f"Created target topic {topic.name} with {topic.num_partitions} partition(s)")
        grown = session.run(session.admin.create_partitions(grow)) if grow else {}
        for name, error in grown.items():
            if error is not None and error.error_code != ErrorCode.INVALID_PARTITIONS:
                raise KcliError(
                    f"cannot grow target topic {name} on {bootstrap} to {grow[name].count} partitions: {error}; "
                    f"add them there or mirror with --no-keep-partitions"
                )
            if error is None:
                report(f"Increased target topic {name} to {grow[name].count} partitions")
