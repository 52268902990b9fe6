"""Tools and the broker leave the directory they run in as they found it.

kcli runs in the virtual environment that also holds the test packages (``scripts/test``
installs them beside kcli), so these processes run with Hypothesis importable, as a user's do
after the README's set-up: nothing kcli does may depend on that.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from broker_process import BrokerProcess

def run_in(cwd: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kcli", *args], input=input, capture_output=True, text=True, timeout=60, cwd=cwd,
        env=dict(os.environ),
    )


def test_tools_and_a_broker_write_nothing_into_the_current_directory(tmp_path):
    assert importlib.util.find_spec("hypothesis") is not None, "the case needs Hypothesis installed beside kcli"
    log_dir = tmp_path / "kafka-logs"
    log_dir.mkdir()
    here = tmp_path / "cwd"
    here.mkdir()
    # The broker runs in its own log dir: anything it wrote into its working directory would be
    # a foreign directory there, and the restart below would refuse it.
    broker = BrokerProcess(log_dir, {"num.partitions": "1", "offsets.topic.num.partitions": "1"}, cwd=log_dir).start()
    try:
        server = broker.bootstrap
        commands = [
            (["topics", "--bootstrap-server", server, "--create", "--topic", "cwd-check", "--partitions", "1"], None),
            (["topics", "--bootstrap-server", server, "--list"], None),
            (["topics", "--bootstrap-server", server, "--describe", "--topic", "cwd-check"], None),
            (["console-producer", "--bootstrap-server", server, "--topic", "cwd-check"], "one\ntwo\n"),
            (["console-consumer", "--bootstrap-server", server, "--topic", "cwd-check", "--from-beginning", "--max-messages", "2"], None),
            (["get-offsets", "--bootstrap-server", server, "--topic", "cwd-check"], None),
            (["configs", "--bootstrap-server", server, "--entity-type", "topics", "--entity-name", "cwd-check", "--describe"], None),
            (["broker-api-versions", "--bootstrap-server", server], None),
            (["dump-log-segments", "--files", str(log_dir / "cwd-check-0" / "00000000000000000000.log")], None),
        ]
        for args, stdin in commands:
            done = run_in(here, *args, input=stdin)
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        assert sorted(os.listdir(here)) == []
        broker.stop()
        broker.start()
        assert run_in(here, "get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", "cwd-check").stdout.strip() == "cwd-check:0:2"
    finally:
        broker.stop()
    assert sorted(os.listdir(here)) == []
    assert ".hypothesis" not in os.listdir(log_dir)
