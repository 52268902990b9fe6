"""A ZooKeeper server in the foreground, as Kafka's ``bin/zookeeper-server-start.sh`` runs it.

kcli does not bundle ZooKeeper: it runs the ZooKeeper of Debian's ``zookeeper`` package (3.8, a
Java program) with ``QuorumPeerMain`` and the properties file given, exactly as Kafka's script
does. Without a file it uses the settings of the ``config/zookeeper.properties`` Kafka ships.
ZooKeeper logs on stderr (slf4j's simple logger). SIGTERM and SIGINT are passed to the server,
which stops; the command then exits 0. If this process dies without passing them on, the kernel
sends the server SIGTERM (``PR_SET_PDEATHSIG``), so no server outlives its command.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from kcli.errors import KcliError

# Kafka's config/zookeeper.properties (2.8 and 3.9 alike).
KAFKA_ZOOKEEPER_DEFAULTS: Mapping[str, str] = {
    "dataDir": "/tmp/zookeeper",
    "clientPort": "2181",
    "maxClientCnxns": "0",
    "admin.enableServer": "false",
}

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# Debian's zookeeper package: its jar's manifest names the jars it needs; a logger binding is
# added so that ZooKeeper's logs reach stderr instead of slf4j's no-op logger.
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
LOGGER_JAR = Path("/usr/share/java/slf4j-simple.jar")
INSTALL_HINT = "apt-get install zookeeper"

_LOGGER_PROPERTIES = (
    "-Dorg.slf4j.simpleLogger.logFile=System.err",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
    "-Dorg.slf4j.simpleLogger.showThreadName=false",
    "-Dorg.slf4j.simpleLogger.showShortLogName=true",
)


class ZooKeeperNotInstalled(KcliError):
    """Java or the ZooKeeper package is missing; the message names the install command."""


def java_command() -> str:
    """The ``java`` to run: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home, "bin", "java"), os.X_OK):
        return str(Path(java_home, "bin", "java"))
    found = shutil.which("java")
    if found is None:
        raise ZooKeeperNotInstalled(
            "ZooKeeper needs a Java runtime and none was found (JAVA_HOME or java on PATH): "
            "apt-get install default-jre-headless"
        )
    return found


def server_command(properties_file: Path) -> list[str]:
    """The command line that runs ZooKeeper with ``properties_file``."""
    if not ZOOKEEPER_JAR.is_file():
        raise ZooKeeperNotInstalled(f"ZooKeeper is not installed ({ZOOKEEPER_JAR} is missing): {INSTALL_HINT}")
    java = java_command()
    classpath = [str(ZOOKEEPER_JAR)]
    if LOGGER_JAR.is_file():
        classpath.append(str(LOGGER_JAR))
    return [java, "-Xmx512M", "-Xms512M", *_LOGGER_PROPERTIES, "-cp", ":".join(classpath), MAIN_CLASS, str(properties_file)]


def write_properties(path: Path, settings: Mapping[str, str]) -> None:
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))


def die_with_parent() -> None:
    """In the child: have the kernel send SIGTERM when the parent dies (Linux's prctl)."""
    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def run_zookeeper(properties_file: str | None) -> int:
    """Run the server in the foreground until it exits or a signal stops it; the exit status."""
    with tempfile.TemporaryDirectory(prefix="kcli-zookeeper-") as scratch:
        if properties_file is None:
            config = Path(scratch, "zookeeper.properties")
            write_properties(config, KAFKA_ZOOKEEPER_DEFAULTS)
        else:
            config = Path(properties_file)
            if not config.is_file():
                raise KcliError(f"ZooKeeper properties file {properties_file} does not exist")
        command = server_command(config)
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        stopping = False

        def stop(signum: int, _frame: object) -> None:
            nonlocal stopping
            stopping = True
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            status = process.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if process.poll() is None:
                process.kill()
                process.wait()
    if stopping:
        return 0
    # Java exits 1 after logging why (a port in use, a bad config); keep its status.
    return status if status >= 0 else 128 - status


def main(properties_file: str | None) -> None:
    sys.exit(run_zookeeper(properties_file))
