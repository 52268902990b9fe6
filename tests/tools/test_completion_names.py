"""Shell completion of topic and group names from a live broker: the generated bash script asks
``kcli complete-names`` for the values of --topic and --group when the command line names a
broker, and a completion never fails loudly."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(90)


def complete(words: list[str]) -> list[str]:
    """COMPREPLY for the last word of ``words`` under the generated bash script."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    probe = f"source {ROOT / 'completions' / 'kcli.bash'}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _kcli; printf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line]


@pytest.fixture(scope="module")
def names(broker) -> tuple[str, str]:
    topic, group = "completion-topic-orders", "completion-group-billing"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # kept alive until its answer arrives
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    consumer.close()
    return topic, group


def test_topic_names_come_from_the_broker(broker, names):
    topic, _group = names
    assert complete(["kcli", "console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", "completion-topic-"]) == [topic]
    assert complete(["kcli", "topics", f"--bootstrap-server={broker.bootstrap}", "--describe", "--topic", "completion-t"]) == [topic]


def test_group_names_come_from_the_broker(broker, names):
    _topic, group = names
    assert complete(["kcli", "consumer-groups", "--bootstrap-server", broker.bootstrap, "--group", "completion-g"]) == [group]


def test_no_broker_on_the_line_completes_nothing(names):
    assert complete(["kcli", "console-consumer", "--topic", "completion-"]) == []


def test_unreachable_broker_is_silent():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = subprocess.run([sys.executable, "-m", "kcli", "complete-names", "topics", "--bootstrap-server", f"127.0.0.1:{port}"],
                            capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
