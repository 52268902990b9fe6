"""``kcli zookeeper-shell``: Kafka's ``bin/zookeeper-shell.sh``, which runs ZooKeeper's zkCli
(``ZooKeeperMain``, through Kafka's ``ZooKeeperMainWithTlsSupportForKafka``).

What it prints follows ZooKeeper 3.8.4's ``ZooKeeperMain`` (the ZooKeeper Kafka 3.9 bundles):

* ``Connecting to HOST:PORT[/chroot]`` first. Once the session is open, the watcher's
  ``WATCHER::`` and ``WatchedEvent state:SyncConnected type:None path:null`` (each after an empty
  line: ``printMessage``), then the command's output. A command that fails before it needs the
  server (a usage error) prints no event, as the Java process exits before it connects.
* With a command after the connect string, that command runs and the shell exits with its exit
  code: 0, 1 for a failed command, 127 for an unknown one (usage on stderr first).
* Without one, ``Welcome to ZooKeeper!`` and commands read line by line from stdin until EOF or
  ``quit``; the exit code is the last command's. Kafka ships no JLine 2, so its shell prints
  ``JLine support is disabled`` and no prompt: so does this one when stdin is not a terminal. On
  a terminal it reads with line editing and shows zkCli's prompt,
  ``[zk: HOST:PORT(CONNECTED) 0] `` (``JLine support is enabled``).
* The session is kazoo's, with zkCli's 30 s session timeout (``-timeout``). One round of
  connection attempts serves a command; when it fails, the command fails with ZooKeeper's
  ``KeeperErrorCode = ConnectionLoss for /path`` (exit 1), as the Java client's queued request
  does at its first failed attempt; the next command tries again. Nothing retries endlessly.

Deliberate differences: a bad number for ``-v`` or ``redo`` is one line (Java lets its
NumberFormatException's stack trace escape and dies); commands ZooKeeper lists but kcli does not
serve (quotas, reconfig, persistent watches, config, whoami) say so in one line; ``rmr``, removed
in ZooKeeper 3.6, is still served as Kafka 2.8's shell (ZooKeeper 3.5) did, with its deprecation
line; leaving closes the session (the Java process just exits, so its ephemeral nodes outlive it
until the session times out). TLS options are refused.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Sequence

from kazoo.client import KazooClient, KazooState
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from kcli.metadata.zk_connect import InvalidConnectStringError, parse_connect
from kcli.java_compat import parse_int
from kcli.output import Output
from kcli.tools.zk_commands import ALIASES, COMMANDS, ConnectionLossError
from kcli.tools.zk_text import (
    EVENT_TYPES,
    CliError,
    java_decode,
    split_command_line,
    validate_path,
    watched_event,
)

DEFAULT_TIMEOUT_MS = 30000  # MyCommandOptions' "timeout"
USAGE_HEADER = "ZooKeeper -server host:port [-zk-tls-config-file <file>] cmd args"
SCRIPT_USAGE = "USAGE: kcli zookeeper-shell zookeeper_host:port[/path] [args...]"
# ZooKeeperMain's own commands, beside CommandFactory's.
BUILT_INS = {"connect": "host:port", "history": "", "redo": "cmdno", "printwatches": "on|off", "quit": ""}
EXIT_COMMAND_NOT_FOUND = 127

_quiet = logging.getLogger("kcli.zookeeper_shell.kazoo")
_quiet.addHandler(logging.NullHandler())
_quiet.propagate = False


class Quit(Exception):
    """``quit``: leave with the shell's exit code."""


class Shell:
    """One zkCli session: the connection, the watcher's printing, history and exit code."""

    timeout_errors = (KazooTimeoutError,)

    def __init__(self, host: str, timeout_ms: int, read_only: bool, output: Output) -> None:
        self.host = host
        self.timeout_ms = timeout_ms
        self.read_only = read_only
        self.print_watches = True
        self.history: dict[int, str] = {}
        self.command_count = 0
        self.exit_code = 0
        self._output = output
        self._lock = threading.RLock()
        self._client: KazooClient | None = None
        self._settled = threading.Event()
        self._connected_once = False
        self._closed = False  # by ``close`` or ``quit``

    # -- output, also from kazoo's threads ---------------------------------------------------------

    def line(self, text: str) -> None:
        with self._lock:
            self._output.line(text)

    def lines(self, texts: list[str]) -> None:
        with self._lock:
            self._output.lines(texts)

    def err(self, text: str) -> None:
        with self._lock:
            self._output.diag(text)

    def flush(self) -> None:
        with self._lock:
            self._output.flush()

    def _print_message(self, text: str) -> None:
        """``ZooKeeperMain.printMessage``: an empty line, then the text."""
        with self._lock:
            self._output.lines(["", text])
            self._output.flush()

    def _event(self, state: str, event_type: str = "None", path: str | None = None) -> None:
        if self.print_watches:
            with self._lock:
                self._print_message("WATCHER::")
                self._print_message(watched_event(state, event_type, path))

    def watch_callback(self, event) -> None:
        """The default watcher, for ``-w``: prints the event when it fires."""
        self._event("SyncConnected", EVENT_TYPES.get(event.type, event.type), event.path)

    # -- the session -------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """``zk.getState().isAlive()``: anything but closed by the user."""
        return not self._closed

    @property
    def state(self) -> str:
        """``zk.getState()`` as the prompt shows it."""
        if self._closed:
            return "CLOSED"
        client = self._client
        if client is not None and client.connected:
            return "CONNECTEDREADONLY" if client.client_state == "CONNECTED_RO" else "CONNECTED"
        return "CONNECTING"

    def open(self, host: str) -> None:
        """``connectToZK``: close a live session, then start connecting to ``host``."""
        _kazoo_hosts(host)  # a string ZooKeeper refuses leaves the live session as it is
        if self.alive and self._client is not None:
            self.close()
        self.host = host
        self._closed = False
        self._start()

    def _start(self) -> None:
        self._settled.clear()
        self._connected_once = False
        client = KazooClient(
            hosts=_kazoo_hosts(self.host),
            timeout=self.timeout_ms / 1000,
            read_only=self.read_only,
            connection_retry=KazooRetry(max_tries=1),
            logger=_quiet,
        )
        client.add_listener(lambda state: self._state_changed(client, state))
        self._client = client
        client.start_async()

    def _state_changed(self, client: KazooClient, state: str) -> None:
        """kazoo's session listener (on its connection thread); a client being discarded is
        no longer heard."""
        if client is not self._client:
            return
        if state == KazooState.CONNECTED:
            if self._connected_once:
                self._event("SyncConnected")
            self._settled.set()
        elif state == KazooState.SUSPENDED:
            if self._connected_once:
                self._event("Disconnected")
        elif state == KazooState.LOST:
            # After SUSPENDED (Disconnected, already printed): the session is gone, for good
            # when it expired; the next command opens a new one.
            if self._connected_once and not self._closed and client.client_state == "EXPIRED_SESSION":
                self._event("Expired")
            self._settled.set()

    def zk(self, path: str | None) -> KazooClient:
        """The connected client for an operation on ``path``; a session that cannot be reached
        within one round of attempts is ``KeeperErrorCode = ConnectionLoss``."""
        if self._client is None or self._client.client_state == "CLOSED" and self._connected_once:
            self._discard()
            self._start()
        client = self._client
        assert client is not None
        if not client.connected and not self._await_connection(client):
            self._discard()
            raise ConnectionLossError(path)
        if not self._connected_once:
            self._connected_once = True
            self._event("SyncConnected")
        return client

    def _await_connection(self, client: KazooClient) -> bool:
        """True once ``client`` is connected; False when its round of attempts ended without a
        session (kazoo's connection thread stops) or the session timeout passed: the Java client
        fails its queued requests after a connect timeout of the session timeout (one host)."""
        deadline = time.monotonic() + self.timeout_ms / 1000
        routine = client._connection._connection_routine
        while not client.connected:
            if routine is None or not routine.is_alive() or time.monotonic() >= deadline:
                return client.connected
            self._settled.wait(0.02)
        return True

    def wait_connected(self) -> None:
        """Connect now (the interactive shell and ``connect``), printing the event; a failure is
        silent here and reported by the next command that needs the server."""
        try:
            self.zk(None)
        except ConnectionLossError:
            pass

    def _discard(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.stop()
            client.close()

    def close(self) -> None:
        """``zk.close()``: ends the session; the watcher hears ``Closed`` unless already closed."""
        if self._closed:
            return
        # The Java client has been connecting since it was made; by the time a command closes
        # it, it has connected (or failed a round of attempts): so here too.
        self.wait_connected()
        self._discard()
        self._closed = True
        self._event("Closed")

    def finish(self) -> None:
        """The process exits: the session is closed without an event (System.exit)."""
        self._discard()

    # -- commands ----------------------------------------------------------------------------------

    def process(self, words: list[str]) -> None:
        """``processCmd``: runs one command, recording its exit code; failures on stderr."""
        try:
            self._process(words)
            self.exit_code = 0
        except CliError as error:
            self.exit_code = error.exit_code
            self.err(str(error))
        finally:
            self.flush()

    def _process(self, words: list[str]) -> None:
        name = words[0]
        command = COMMANDS.get(ALIASES.get(name, name))
        if command is None and name not in BUILT_INS:
            self._usage()
            raise CliError(f"Command not found: Command not found {name}", EXIT_COMMAND_NOT_FOUND)
        if name == "quit":
            self.close()
            raise Quit
        if name == "redo" and len(words) >= 2:
            self._redo(words[1])
        elif name == "history":
            self.lines([f"{i} - {self.history.get(i, 'null')}" for i in range(max(self.command_count - 10, 0), self.command_count + 1)])
        elif name == "printwatches":
            if len(words) == 1:
                self.line(f"printwatches is {'on' if self.print_watches else 'off'}")
            else:
                self.print_watches = words[1] == "on"
        elif name == "connect":
            self.open(words[1] if len(words) >= 2 else self.host)
            self.wait_connected()
        if not self.alive:
            self.line("Not connected")
            return
        if command is None:
            return
        if command.run is None:
            raise CliError(f"kcli zookeeper-shell does not serve '{name}' (ZooKeeper's zkCli does)")
        command.run(self, list(words))

    def _redo(self, index_text: str) -> None:
        try:
            index = java_decode(index_text)
        except ValueError as error:
            raise CliError(f"java.lang.NumberFormatException: {error}") from None
        if self.command_count <= index or index < 0:
            raise CliError("Command index out of range")
        line = self.history[index]
        words = split_command_line(line)
        if words and words[0] == "redo":
            raise CliError("No redoing redos")
        self.history[self.command_count] = line
        self.process(words)

    def _usage(self) -> None:
        """ZooKeeperMainWithTlsSupportForKafka.kafkaTlsUsage, on stderr."""
        listed = {name: command.options for name, command in COMMANDS.items()} | BUILT_INS
        self.err(USAGE_HEADER)
        for name in sorted(listed):
            self.err(f"\t{name} {listed[name]}")

    def execute_line(self, line: str) -> None:
        """``executeLine``: one line of the interactive shell."""
        words = split_command_line(line)
        if not words:
            return
        self.history[self.command_count] = line
        self.process(words)
        self.command_count += 1

    def prompt(self) -> str:
        return f"[zk: {self.host}({self.state}) {self.command_count}] "


def _parse_main_options(args: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """``MyCommandOptions.parseOptions``: ZooKeeperMain's flags, then the command and its words.
    Unknown flags before the command are ignored, as ZooKeeper does."""
    options: dict[str, str] = {}
    words: list[str] = []
    it = iter(args)
    for opt in it:
        if opt in ("-server", "-timeout", "-client-configuration", "-zk-tls-config-file"):
            value = next(it, None)
            if value is None:
                raise CliError(f"Error: no argument found for option {opt}")
            options[opt] = value
        elif opt == "-r":
            options[opt] = "true"
        elif not opt.startswith("-"):
            words = [opt, *it]
            break
    return options, words


def _check_chroot(server: str) -> None:
    """ConnectStringParser: what follows the first ``/`` is the chroot, a valid path unless it
    is ``/`` alone."""
    cut = server.find("/")
    if cut >= 0 and len(server) - cut > 1:
        validate_path(server[cut:])


def _kazoo_hosts(server: str) -> str:
    """ConnectStringParser's reading of ``server`` (the chroot checked first, with zkCli's
    message), in the form kazoo reads; a string it refuses is one ``CliError``."""
    _check_chroot(server)
    try:
        parsed = parse_connect(server)
    except InvalidConnectStringError as error:
        raise CliError(str(error)) from None
    return parsed.hosts + (parsed.chroot or "")


def run(connect: str | None, args: Sequence[str]) -> int:
    """The shell's exit code for ``zookeeper-shell.sh CONNECT ARGS...``."""
    output = Output()
    if not connect:
        output.line(SCRIPT_USAGE)
        output.flush()
        return 1
    try:
        options, words = _parse_main_options(["-server", connect, *args])
        for tls in ("-zk-tls-config-file", "-client-configuration"):
            if tls in options:
                raise CliError(f"kcli zookeeper-shell does not support {tls} (TLS to ZooKeeper)")
        server = options["-server"]
        output.line(f"Connecting to {server}")
        output.flush()
        # connectToZK: Integer.parseInt of -timeout, then ConnectStringParser's chroot check.
        try:
            timeout_ms = parse_int(options.get("-timeout", str(DEFAULT_TIMEOUT_MS)))
        except ValueError as error:
            raise CliError(f"java.lang.NumberFormatException: {error}") from None
        _kazoo_hosts(server)
    except CliError as error:
        output.diag(str(error))
        return 1
    # ZooKeeper lets the server raise a tiny session timeout to its minimum; kazoo needs > 0.
    shell = Shell(server, max(timeout_ms, 1), "-r" in options, output)
    shell.open(server)
    try:
        if words:
            shell.process(words)
        else:
            _interactive(shell, output)
    except Quit:
        pass
    finally:
        shell.finish()
        output.flush()
    return shell.exit_code


def _interactive(shell: Shell, output: Output) -> None:
    output.line("Welcome to ZooKeeper!")
    terminal = sys.stdin.isatty()
    output.line(f"JLine support is {'enabled' if terminal else 'disabled'}")
    output.flush()
    shell.wait_connected()
    if terminal:
        import readline  # noqa: F401 - line editing and history for input()

        while True:
            try:
                line = input(shell.prompt())
            except EOFError:
                output.line("")
                return
            shell.execute_line(line)
    for line in sys.stdin:
        shell.execute_line(line.rstrip("\r\n"))
