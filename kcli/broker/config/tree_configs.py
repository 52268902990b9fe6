"""Config overrides read from the metadata tree, checked key by key before a broker uses them.

A topic's ``/config/topics/T`` and the brokers' ``/config/brokers/N`` and
``/config/brokers/<default>`` are written by the admin requests, which validate them, but also by
any ZooKeeper-era tool or by hand, which may not. A value that does not parse
(``retention.ms=banana``) must not stop the broker from hosting the topic or answering requests:
as Kafka 2.8's config change handlers do (they log the error and keep the config in effect), the
bad key is named in one ERROR line, once for as long as the tree holds that value, and the value
in effect before is kept (or the default, when there was none). The metadata cache applies this
to every override set it reads, at start and on every change, in the cluster and embedded modes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from kcli.broker.config.broker_config import broker_config_key
from kcli.errors import KafkaError
from kcli.metadata import zk_paths as zk
from kcli.storage.log_config import LogConfig

log = logging.getLogger("kcli.broker.config")


def check_topic_config(key: str, value: str) -> None:
    """KafkaError when ``key`` is not a topic config or ``value`` does not parse for it."""
    LogConfig.from_properties({key: value})


def check_broker_config(key: str, value: str) -> None:
    """KafkaError when ``value`` does not parse for the broker config ``key`` (a key kcli does
    not know is left to whoever reads it, as Kafka keeps unknown dynamic configs)."""
    definition = broker_config_key(key)
    if definition is not None:
        definition.parse(value)


class TreeConfigs:
    """Checks override sets as they are read and remembers which bad values it has reported."""

    def __init__(self) -> None:
        self._reported: dict[str, set[tuple[str, str]]] = {}

    def topic(self, name: str, configs: Mapping[str, str], in_effect: Mapping[str, str] | None) -> dict[str, str]:
        return self._checked(zk.topic_config_path(name), f"topic {name}", configs, in_effect, check_topic_config)

    def broker(self, broker_id: int | None, configs: Mapping[str, str], in_effect: Mapping[str, str] | None) -> dict[str, str]:
        what = "the brokers' defaults" if broker_id is None else f"broker {broker_id}"
        return self._checked(zk.broker_config_path(broker_id), what, configs, in_effect, check_broker_config)

    def _checked(
        self, path: str, what: str, configs: Mapping[str, str], in_effect: Mapping[str, str] | None,
        check: Callable[[str, str], None],
    ) -> dict[str, str]:
        """``configs`` with each value that does not check replaced by the one ``in_effect``
        (dropped when there is none), each such value reported once."""
        in_effect = in_effect or {}
        checked: dict[str, str] = {}
        bad: set[tuple[str, str]] = set()
        for key, value in configs.items():
            try:
                check(key, value)
            except KafkaError as e:
                bad.add((key, value))
                kept = in_effect.get(key)
                if (key, value) not in self._reported.get(path, set()):
                    keeping = f"keeping {key}={kept}" if kept is not None else f"{key} stays at its default"
                    log.error("Ignoring the invalid config %s=%s of %s in %s (%s); %s", key, value, what, path, e, keeping)
                if kept is not None:
                    checked[key] = kept
                continue
            checked[key] = value
        if bad:
            self._reported[path] = bad
        else:
            self._reported.pop(path, None)
        return checked
