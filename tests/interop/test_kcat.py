"""kcat against a real kcli broker: metadata listing (-L), producing lines (-P, with -K keys,
-H headers, -Z nulls, -p partitions, -z codecs), consuming to the end (-C -e) from the beginning
or an offset, and offset queries (-Q). Every output is compared line by line."""

from __future__ import annotations

import subprocess
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

KCAT = "/usr/bin/kcat"


def kcat(broker: Any, *args: str, stdin: str | None = None) -> list[str]:
    """Run kcat against the broker; returns its stdout lines and fails the test on a non-zero exit."""
    result = subprocess.run([KCAT, "-b", broker.bootstrap, *args], input=stdin, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"kcat {' '.join(args)} exited {result.returncode}: {result.stderr}"
    return result.stdout.splitlines()


def create_topic(broker: Any, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=10).values():
        future.result(timeout=20)


def test_list_shows_the_topic_and_the_broker(broker, topic):
    create_topic(broker, topic, 3)

    lines = kcat(broker, "-L")

    assert f"  broker 0 at 127.0.0.1:{broker.port} (controller)" in lines
    start = lines.index(f'  topic "{topic}" with 3 partitions:')
    assert lines[start + 1:start + 4] == [f"    partition {p}, leader 0, replicas: 0, isrs: 0" for p in range(3)]
    assert kcat(broker, "-L", "-t", topic)[-4:] == lines[start:start + 4]


def test_produce_keyed_lines_to_an_auto_created_topic_and_read_them_back(broker, topic):
    lines = [f"key-{i % 10}:line {i} {'x' * (i % 50)}" for i in range(500)]

    kcat(broker, "-P", "-t", topic, "-K:", "-z", "zstd", stdin="\n".join(lines) + "\n")

    assert f'  topic "{topic}" with 1 partitions:' in kcat(broker, "-L", "-t", topic)
    assert kcat(broker, "-C", "-t", topic, "-e", "-o", "beginning", "-K:") == lines
    assert kcat(broker, "-Q", "-t", f"{topic}:0:-1") == [f"{topic} [0] offset 500"]
    assert kcat(broker, "-Q", "-t", f"{topic}:0:-2") == [f"{topic} [0] offset 0"]


def test_headers_nulls_and_offsets(broker, topic):
    kcat(broker, "-P", "-t", topic, "-K:", "-Z", "-H", "origin=kcat", "-H", "n=1", stdin="k1:first\nk2:\n:no key\nk4:last\n")

    consumed = kcat(broker, "-C", "-t", topic, "-e", "-o", "beginning", "-Z", "-f", "%p|%o|%k|%s|%h\\n")

    assert consumed == [
        "0|0|k1|first|origin=kcat,n=1",
        "0|1|k2|NULL|origin=kcat,n=1",
        "0|2|NULL|no key|origin=kcat,n=1",
        "0|3|k4|last|origin=kcat,n=1",
    ]
    assert kcat(broker, "-C", "-t", topic, "-e", "-o", "2", "-f", "%o %k\\n") == ["2 ", "3 k4"]


def test_partition_targeted_produce_and_consume(broker, topic):
    create_topic(broker, topic, 4)
    for partition in range(4):
        kcat(broker, "-P", "-t", topic, "-p", str(partition), stdin="".join(f"p{partition}-{i}\n" for i in range(partition + 2)))

    for partition in range(4):
        consumed = kcat(broker, "-C", "-t", topic, "-p", str(partition), "-e", "-o", "beginning", "-f", "%p %o %s\\n")
        assert consumed == [f"{partition} {i} p{partition}-{i}" for i in range(partition + 2)]
    everything = kcat(broker, "-C", "-t", topic, "-e", "-o", "beginning")
    assert sorted(everything) == sorted(f"p{p}-{i}" for p in range(4) for i in range(p + 2))
