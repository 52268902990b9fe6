"""A ZooKeeper server in the foreground, as Kafka's ``bin/zookeeper-server-start.sh`` runs it.

kcli does not bundle ZooKeeper: it runs the ZooKeeper of Debian's ``zookeeper`` package (3.8, a
Java program) with ``QuorumPeerMain`` and the properties file given, exactly as Kafka's script
does. Without a file it uses the settings of the ``config/zookeeper.properties`` Kafka ships.
The file is checked before Java starts (``zookeeper_config``), so that a bad value or a port in
use is one line naming the key or the port; ZooKeeper's AdminServer is off unless the file turns
it on. ZooKeeper logs on stderr (slf4j's simple logger), held back until it serves clients so that
a start Java still refuses ends in the one line of its cause (``zookeeper_output``), exit 1.
A server killed by a signal it was not passed is one line naming the signal, exit 1.
SIGTERM and SIGINT are passed to the server,
which stops; the command then exits 0. If this process dies without passing them on, the kernel
sends the server SIGTERM (``PR_SET_PDEATHSIG``), so no server outlives its command.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from kcli.errors import KcliError
from kcli.tools import zookeeper_config
from kcli.tools.zookeeper_output import StartupOutput

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
# How long ZooKeeper's output is held while it starts, at most, and how often it is asked
# whether it serves.
STARTUP_OUTPUT_HOLD_S = 30.0
SERVING_POLL_S = 0.2
PUMP_DRAIN_S = 5.0

_LOGGER_PROPERTIES = (
    "-Dorg.slf4j.simpleLogger.logFile=System.err",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
    "-Dorg.slf4j.simpleLogger.showThreadName=false",
    "-Dorg.slf4j.simpleLogger.showShortLogName=true",
)


# ZooKeeper's AdminServer needs Jetty, which Debian's package does not pull in: enabled (3.8's
# default), it logs a javax/servlet NoClassDefFoundError trace at every start. It is off unless
# the file asks for it: the file's admin.enableServer (set as the zookeeper.admin.enableServer
# system property while the file is read) wins over this one.
NO_ADMIN_SERVER = "-Dzookeeper.admin.enableServer=false"


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
    return [java, "-Xmx512M", "-Xms512M", *_LOGGER_PROPERTIES, NO_ADMIN_SERVER, "-cp", ":".join(classpath), MAIN_CLASS, str(properties_file)]


def write_properties(path: Path, settings: Mapping[str, str]) -> None:
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))


def die_with_parent() -> None:
    """In the child: have the kernel send SIGTERM when the parent dies (Linux's prctl)."""
    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def zookeeper_answers(host: str, port: int) -> bool:
    """True once ZooKeeper serves on ``host:port``: it answers its ``srvr`` four-letter command
    (allowed by default) with its version."""
    try:
        with socket.create_connection((host, port), timeout=1) as conn:
            conn.sendall(b"srvr")
            return b"Zookeeper version" in conn.recv(4096)
    except OSError:
        return False


def run_zookeeper(properties_file: str | None) -> int:
    """Run the server in the foreground until it exits or a signal stops it; the exit status.

    The file is checked first (``zookeeper_config``: ZooKeeper's own checks, the client port
    free), each mistake one line. ZooKeeper's output is held until it serves clients (or
    ``STARTUP_OUTPUT_HOLD_S`` has passed: a quorum member may wait for its peers), so that a
    start that fails is the one line of its cause, not Java's stack trace."""
    with tempfile.TemporaryDirectory(prefix="kcli-zookeeper-") as scratch:
        if properties_file is None:
            path = Path(scratch, "zookeeper.properties")
            write_properties(path, KAFKA_ZOOKEEPER_DEFAULTS)
        else:
            path = Path(properties_file)
        config = zookeeper_config.read_config(path)
        zookeeper_config.check(config)
        command = server_command(path)
        zookeeper_config.check_ports(config)
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        output = StartupOutput(process.stdout, sys.stderr)
        pump = threading.Thread(target=output.pump, name="zookeeper-output", daemon=True)
        pump.start()
        stopping = False

        def stop(signum: int, _frame: object) -> None:
            nonlocal stopping
            stopping = True
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            status = _wait_serving(process, output, zookeeper_config.client_address(config))
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if process.poll() is None:
                process.kill()
                process.wait()
            pump.join(PUMP_DRAIN_S)
    if stopping:
        output.release()
        return 0
    if status > 0 and not output.released:
        raise KcliError(f"ZooKeeper did not start: {output.cause()}")
    output.release()
    if status < 0:  # a signal not passed by this command: no cause of Java's to condense
        raise KcliError(f"ZooKeeper (pid {process.pid}) was killed by {signal.Signals(-status).name}")
    # Java exits 1 after logging why; keep its status.
    return status


def _wait_serving(process: subprocess.Popen, output: StartupOutput, address: tuple[str, int] | None) -> int:
    """Wait for the exit, releasing the held output once the server serves."""
    hold_until = time.monotonic() + STARTUP_OUTPUT_HOLD_S
    while not output.released:
        try:
            return process.wait(SERVING_POLL_S)
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() > hold_until or (address is not None and zookeeper_answers(*address)):
            output.release()
    return process.wait()


def main(properties_file: str | None) -> None:
    sys.exit(run_zookeeper(properties_file))
