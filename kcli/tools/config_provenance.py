"""Where a config's value comes from (``configs --describe --provenance``, ``--only-overrides``):
kcli's own addition to kafka-configs.sh's lines.

DescribeConfigs answers each config with its source and, when asked, its synonyms: every place
the value could come from, highest precedence first (a topic override, then the broker's
dynamic per-broker config, the dynamic cluster-wide default, the static server.properties value,
Kafka's default). The value in effect is the first synonym's, so its source is the provenance;
brokers that send no synonyms give it as the entry's own source. Sources keep Kafka's names
(``ConfigEntry.ConfigSource``)."""

from __future__ import annotations

from typing import Any

def provenance(entry: Any) -> str:
    """The Kafka source name of the value in effect."""
    if entry.synonyms:
        return entry.synonyms[0].source.name
    return entry.source.name


def is_override(entry: Any) -> bool:
    """Set somewhere, rather than Kafka's default."""
    return provenance(entry) != "DEFAULT_CONFIG"
