"""``kcli zookeeper-shell``: Kafka's zookeeper-shell.sh, run as a process against a real ZooKeeper.

Expected text comes from ZooKeeper 3.8.4's sources (the ZooKeeper Kafka 3.9 bundles), named at
each check: ``ZooKeeperMain`` (``Connecting to``, ``printMessage``'s empty line, the watcher's
``WATCHER::``, the interactive banner, ``Not connected``, exit codes), ``cli/*Command.java``
(usage strings, ``Created``, ``Sync is OK``, deprecation lines), ``cli/CliWrapperException``
(``Node does not exist: /x`` ...), ``cli/StatPrinter`` (the stat lines, with
``java.util.Date.toString``), ``WatchedEvent.toString``, jute's ``ToStringOutputArchive`` (an
ACL id), ``ZKUtil`` (``ls -R`` order, permission letters), ``common/PathUtils`` and Commons CLI's
exception texts; and from Kafka 3.9's ``ZooKeeperMainWithTlsSupportForKafka`` (the usage
header). The znodes are written and read back with kazoo, independently of the tool. Each test
keeps to a chroot of its own on the session's server; the processes run with TZ=UTC so that
``Date.toString`` ends in ``UTC <year>``.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.security import ACL, Id

from tests.zookeeper_process import free_port

UTC = {"TZ": "UTC"}
# ZooKeeperMain.printMessage("WATCHER::") and printMessage(event.toString()) once connected.
CONNECTED = ["", "WATCHER::", "", "WatchedEvent state:SyncConnected type:None path:null"]
CLOSED = ["", "WATCHER::", "", "WatchedEvent state:Closed type:None path:null"]
OPEN_ACL = [ACL(31, Id("world", "anyone"))]


def run_kcli(*args: str, input: str | None = None, timeout: float = 60):
    from tests.tools.conftest import run_kcli as run

    return run(*args, input=input, env=UTC, timeout=timeout)


class Chroot:
    def __init__(self, server, path: str) -> None:
        self.connect = server.connect + path
        self.path = path
        self.zk = KazooClient(hosts=self.connect)
        self.zk.start(timeout=15)

    def shell(self, *args: str, input: str | None = None, connect: str | None = None):
        return run_kcli("zookeeper-shell", connect or self.connect, *args, input=input)


@pytest.fixture
def chroot(zookeeper_server) -> Iterator[Chroot]:
    path = f"/zkshell-{uuid.uuid4().hex[:10]}"
    root = KazooClient(hosts=zookeeper_server.connect)
    root.start(timeout=15)
    root.create(path)
    root.stop()
    root.close()
    made = Chroot(zookeeper_server, path)
    try:
        yield made
    finally:
        made.zk.stop()
        made.zk.close()


def java_date(epoch_ms: int) -> str:
    """java.util.Date.toString in UTC: EEE MMM dd HH:mm:ss zzz yyyy, English names."""
    days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    when = datetime.datetime.fromtimestamp(epoch_ms / 1000, datetime.UTC)
    return f"{days[when.weekday()]} {months[when.month - 1]} {when:%d %H:%M:%S} UTC {when.year}"


def stat_printer(stat) -> list[str]:
    """cli/StatPrinter.print: eleven lines, zxids and the owner as 0x + Long.toHexString."""
    return [
        f"cZxid = 0x{stat.czxid:x}",
        f"ctime = {java_date(stat.ctime)}",
        f"mZxid = 0x{stat.mzxid:x}",
        f"mtime = {java_date(stat.mtime)}",
        f"pZxid = 0x{stat.pzxid:x}",
        f"cversion = {stat.cversion}",
        f"dataVersion = {stat.version}",
        f"aclVersion = {stat.aversion}",
        f"ephemeralOwner = 0x{stat.ephemeralOwner:x}",
        f"dataLength = {stat.dataLength}",
        f"numChildren = {stat.numChildren}",
    ]


def output(result, chroot: Chroot) -> list[str]:
    """The command's own lines: after ``Connecting to ...`` and the connected event."""
    assert result.lines[:5] == [f"Connecting to {chroot.connect}", *CONNECTED], result
    return result.lines[5:]


class ShellProcess:
    """An interactive shell fed line by line, its stdout and stderr read as they come."""

    def __init__(self, connect: str) -> None:
        import os
        import queue
        import subprocess
        import sys
        import threading

        self.process = subprocess.Popen(
            [sys.executable, "-m", "kcli", "zookeeper-shell", connect],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, **UTC},
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line.rstrip("\n")) for line in self.process.stdout], daemon=True).start()

    def send(self, line: str) -> None:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def read_until(self, expected: str) -> list[str]:
        seen = []
        while not seen or seen[-1] != expected:
            seen.append(self.lines.get(timeout=30))
        return seen

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


def test_one_command_connects_prints_the_event_then_its_output(chroot):
    chroot.zk.create("/b")
    chroot.zk.create("/a")
    result = chroot.shell("ls", "/")
    assert result.returncode == 0, result
    # ZooKeeperMain: "Connecting to " + server, then the watcher's event, then LsCommand's
    # printChildren: sorted, "[a, b]".
    assert result.lines == [f"Connecting to {chroot.connect}", *CONNECTED, "[a, b]"]
    assert result.stderr == ""


def test_ls_with_stat_and_recursive(chroot):
    for path in ("/t", "/t/b", "/t/a", "/t/a/y", "/t/a/x", "/t/b/z"):
        chroot.zk.create(path)
    result = chroot.shell("ls", "-s", "/t")
    _, stat = chroot.zk.get("/t")
    assert output(result, chroot) == ["[a, b]", *stat_printer(stat)]
    # ZKUtil.visitSubTreeDFS: the root, then a node's sorted children before descending into each.
    result = chroot.shell("ls", "-R", "/t")
    assert output(result, chroot) == ["/t", "/t/a", "/t/b", "/t/a/x", "/t/a/y", "/t/b/z"]
    # Commons CLI takes options after the path and concatenated; -R wins over -s.
    assert output(chroot.shell("ls", "/t", "-s"), chroot) == ["[a, b]", *stat_printer(chroot.zk.get("/t")[1])]
    assert output(chroot.shell("ls", "-sR", "/t/b"), chroot) == ["/t/b", "/t/b/z"]


def test_get_prints_the_data_or_null_and_the_stat(chroot):
    chroot.zk.create("/none", None)  # created with null data, as Kafka creates its paths
    chroot.zk.create("/text", "héllo".encode())
    assert output(chroot.shell("get", "/none"), chroot) == ["null"]  # GetCommand: null data is "null"
    result = chroot.shell("get", "-s", "/text")
    assert result.returncode == 0
    assert output(result, chroot) == ["héllo", *stat_printer(chroot.zk.get("/text")[1])]


def test_stat_and_a_missing_node(chroot):
    chroot.zk.create("/s", b"12345")
    chroot.zk.create("/s/c")
    assert output(chroot.shell("stat", "/s"), chroot) == stat_printer(chroot.zk.exists("/s"))
    for command in ("stat", "get", "ls", "getAcl", "getAllChildrenNumber", "delete", "deleteall"):
        result = chroot.shell(command, "/missing")
        # CliWrapperException: "Node does not exist: " + path; processCmd's exit code 1.
        assert result.returncode == 1, (command, result)
        assert result.stderr.splitlines() == ["Node does not exist: /missing"], (command, result)
        assert output(result, chroot) == []


def test_create_persistent_sequential_and_failures(chroot):
    result = chroot.shell("create", "/c", "data")
    # CreateCommand prints "Created " + path on stderr.
    assert (result.returncode, result.stderr) == (0, "Created /c\n"), result
    assert output(result, chroot) == []
    assert chroot.zk.get("/c")[0] == b"data"
    result = chroot.shell("create", "/c/n")
    assert result.stderr == "Created /c/n\n"
    assert chroot.zk.get("/c/n")[0] is None  # no data argument: null data, as zkCli sends it
    # A sequential node's name ends in the parent's cversion, 10 digits.
    assert chroot.shell("create", "-s", "/c/q", "x").stderr == "Created /c/q0000000001\n"
    assert chroot.shell("create", "-s", "/c/").stderr == "Created /c/0000000002\n"
    result = chroot.shell("create", "/c", "again")
    assert (result.returncode, result.stderr) == (1, "Node already exists: /c\n")
    result = chroot.shell("create", "/nope/child")
    assert (result.returncode, result.stderr) == (1, "Node does not exist: /nope/child\n")
    result = chroot.shell("create", "/acl", "x", "world:anyone:r")
    assert result.returncode == 0
    assert chroot.zk.get_acls("/acl")[0] == [ACL(1, Id("world", "anyone"))]
    # AclParser: a malformed entry is reported and skipped; ZooKeeper.validateACL refuses the
    # empty list before any request, and CreateCommand prints its message before the wrapper's.
    result = chroot.shell("create", "/bad-acl", "x", "nonsense")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "nonsense does not have the form scheme:id:perm",
        "KeeperErrorCode = InvalidACL",
        "Acl is not valid : null",
    ]
    assert chroot.zk.exists("/bad-acl") is None


def test_create_container_and_ttl_checks(chroot):
    assert chroot.shell("create", "-c", "/box").stderr == "Created /box\n"
    # (A container's Stat shows owner 0 to clients, like a persistent node's: only the server's
    # container reaper, minutes later, tells them apart, so this checks the creation only.)
    assert chroot.zk.exists("/box") is not None
    cases = {
        ("-c", "-e"): "-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.",
        ("-t", "abc"): "-t argument must be a long value",
        ("-t", "5", "-e"): "TTLs cannot be used with Ephemeral znodes",
        ("-t", "0"): "ttl must be positive and cannot be larger than: 1099511627775",
    }
    for flags, message in cases.items():
        result = chroot.shell("create", *flags, "/never")
        assert (result.returncode, result.stderr) == (1, message + "\n"), flags
    assert chroot.zk.exists("/never") is None


def test_set_delete_and_versions(chroot):
    chroot.zk.create("/v", b"0")
    assert chroot.shell("set", "/v", "one").returncode == 0
    data, stat = chroot.zk.get("/v")
    assert (data, stat.version) == (b"one", 1)
    result = chroot.shell("set", "-v", "0", "/v", "two")
    assert (result.returncode, result.stderr) == (1, "version No is not valid : /v\n")
    result = chroot.shell("set", "-s", "-v", "1", "/v", "two")
    assert output(result, chroot) == stat_printer(chroot.zk.get("/v")[1])
    assert chroot.zk.get("/v")[0] == b"two"
    chroot.zk.create("/v/child")
    result = chroot.shell("delete", "/v")
    assert (result.returncode, result.stderr) == (1, "Node not empty: /v\n")
    result = chroot.shell("delete", "-v", "9", "/v/child")
    assert (result.returncode, result.stderr) == (1, "version No is not valid : /v/child\n")
    # DeleteCommand.retainCompatibility: the old version argument is announced and ignored.
    result = chroot.shell("delete", "/v/child", "9")
    assert result.returncode == 0
    assert result.stderr == "'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.\n"
    assert chroot.zk.exists("/v/child") is None


def test_deleteall_and_the_rmr_alias(chroot):
    for path in ("/tree", "/tree/a", "/tree/a/b", "/tree/c", "/other", "/other/x"):
        chroot.zk.create(path)
    result = chroot.shell("deleteall", "/tree")
    assert (result.returncode, result.stderr) == (0, ""), result
    assert chroot.zk.exists("/tree") is None
    # Batches smaller than the tree: leaves first, several multis.
    result = chroot.shell("deleteall", "/other", "-b", "1")
    assert result.returncode == 0 and chroot.zk.exists("/other") is None
    chroot.zk.create("/old/x", makepath=True)
    result = chroot.shell("rmr", "/old")
    # ZooKeeper 3.5's DeleteAllCommand("rmr") (Kafka 2.8's shell): its deprecation line.
    assert result.stderr == "The command 'rmr' has been deprecated. Please use 'deleteall' instead.\n"
    assert chroot.zk.exists("/old") is None
    result = chroot.shell("deleteall", "/x", "-b", "many")
    assert (result.returncode, result.stderr) == (1, "-b argument must be an int value\n")


def test_get_acl_sync_children_number_and_version(chroot):
    chroot.zk.create("/open")
    chroot.zk.create("/ip", acl=[ACL(1 | 2, Id("ip", "127.0.0.1")), ACL(31, Id("world", "anyone"))])
    # GetAclCommand: Id.toString() (jute: 'scheme,'id and a line end), then ": " + the letters
    # of ZKUtil.getPermString in cdrwa order.
    assert output(chroot.shell("getAcl", "/open"), chroot) == ["'world,'anyone", ": cdrwa"]
    assert output(chroot.shell("getAcl", "/ip"), chroot) == ["'ip,'127.0.0.1", ": rw", "'world,'anyone", ": cdrwa"]
    result = chroot.shell("getAcl", "-s", "/open")
    assert output(result, chroot)[2:] == stat_printer(chroot.zk.exists("/open"))
    assert output(chroot.shell("sync", "/open"), chroot) == ["Sync is OK"]
    chroot.zk.create("/n/a/b", makepath=True)
    chroot.zk.create("/n/c")
    assert output(chroot.shell("getAllChildrenNumber", "/n"), chroot) == ["3"]
    # VersionCommand: "ZooKeeper CLI version: " + Version.getFullVersion() of ZooKeeper 3.8.4.
    result = chroot.shell("version")
    assert result.lines[-1] == "ZooKeeper CLI version: 3.8.4-9316c2a7a97e1666d8f4593f34dd6fc36ecc436c, built on 2024-02-12 22:16 UTC"


def test_interactive_shell_reads_piped_stdin(chroot):
    chroot.zk.create("/i", b"v")
    script = "ls /\nget /i\n\ncreate -e /e\ngetEphemerals\nstat /missing\n"
    result = chroot.shell(input=script)
    # ZooKeeperMain.run without a command: "Welcome to ZooKeeper!", and Kafka has no JLine 2:
    # "JLine support is disabled", no prompt; then the lines' outputs in order.
    lines = result.lines
    assert lines[:3] == [f"Connecting to {chroot.connect}", "Welcome to ZooKeeper!", "JLine support is disabled"]
    assert lines[3:7] == CONNECTED
    assert lines[7:9] == ["[i]", "v"]
    # getEphemerals sends the prefix without the chroot and prints the server's paths.
    assert lines[9:] == [f"[{chroot.path}/e]"]
    assert result.stderr.splitlines() == ["Created /e", "Node does not exist: /missing"]
    assert result.returncode == 1  # the last command's exit code
    assert chroot.zk.exists("/e") is None  # the session ended with the shell


def test_interactive_quit_close_connect_history(chroot):
    chroot.zk.create("/sub/x", makepath=True)
    result = chroot.shell(input="ls /nope\nquit\nls /\n")
    # quit closes the session (the watcher hears Closed) and exits with the exit code so far.
    assert result.lines[3:] == CONNECTED + CLOSED
    assert result.returncode == 1
    script = f"close\nls /\nconnect {chroot.connect}/sub\nls /\nhistory\nprintwatches\nprintwatches off\nclose\n"
    result = chroot.shell(input=script)
    assert result.returncode == 0, result
    assert result.lines[3:] == [
        *CONNECTED,
        *CLOSED,
        "Not connected",
        *CONNECTED,
        "[x]",
        "0 - close",
        "1 - ls /",
        f"2 - connect {chroot.connect}/sub",
        "3 - ls /",
        "4 - history",
        "printwatches is on",
    ]


def test_interactive_prompt_on_a_terminal(chroot):
    import os
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "kcli", "zookeeper-shell", chroot.connect],
            stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **UTC},
        )
        os.write(leader, b"ls /\n\x04")
        out, _err = process.communicate(timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    text = out.decode()
    assert "JLine support is enabled" in text
    # ZooKeeperMain.getPrompt: "[zk: " + host + "(" + state + ") " + commandCount + "] ".
    assert f"[zk: {chroot.connect}(CONNECTED) 0] " in text
    assert f"[zk: {chroot.connect}(CONNECTED) 1] " in text
    assert process.returncode == 0


def test_bad_arguments(chroot):
    cases = [
        (("ls",), 1, ["ls [-s] [-w] [-R] path"]),
        (("get",), 1, ["get [-s] [-w] path"]),
        (("set", "/x"), 1, ["set [-s] [-v version] path data"]),
        (("create",), 1, ["create [-s] [-e] [-c] [-t ttl] path [data] [acl]"]),
        (("ls", "-x", "/"), 1, ["org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x"]),
        (("set", "-v"), 1, ["org.apache.commons.cli.MissingArgumentException: Missing argument for option: v"]),
        (("get", "relative"), 1, ["Path must start with / character"]),
        (("get", "/a/"), 1, ["Path must not end with / character"]),
        (("get", "/a//b"), 1, ['Invalid path string "/a//b" caused by empty node name specified @3']),
        (("set", "-v", "abc", "/x", "d"), 1, ['java.lang.NumberFormatException: For input string: "abc"']),
        (("version", "extra"), 1, ["version "]),
    ]
    for args, code, stderr in cases:
        result = chroot.shell(*args)
        assert (result.returncode, result.stderr.splitlines()) == (code, stderr), (args, result)
        # These fail before the server is needed: no event, only "Connecting to".
        assert result.lines == [f"Connecting to {chroot.connect}"], (args, result)
    result = chroot.shell("bogus", "/")
    # ZooKeeperMainWithTlsSupportForKafka.kafkaTlsUsage, then CommandNotFoundException (127).
    assert result.returncode == 127
    errors = result.stderr.splitlines()
    assert errors[0] == "ZooKeeper -server host:port [-zk-tls-config-file <file>] cmd args"
    assert "\tls [-s] [-w] [-R] path" in errors and "\tconnect host:port" in errors
    assert errors[1:-1] == sorted(errors[1:-1])
    assert errors[-1] == "Command not found: Command not found bogus"
    # zookeeper-shell.sh without arguments.
    result = run_kcli("zookeeper-shell")
    assert (result.returncode, result.lines) == (1, ["USAGE: kcli zookeeper-shell zookeeper_host:port[/path] [args...]"])
    result = chroot.shell("ls", "/", connect=chroot.connect + "/")
    assert (result.returncode, result.stderr) == (1, "Path must not end with / character\n")  # ConnectStringParser
    assert "Traceback" not in result.stderr


def test_unreachable_server_fails_the_command(tmp_path):
    connect = f"127.0.0.1:{free_port()}"
    result = run_kcli("zookeeper-shell", connect, "ls", "/", timeout=60)
    # The Java client fails its queued request at the first failed attempt: ConnectionLoss.
    assert result.returncode == 1, result
    assert result.lines == [f"Connecting to {connect}"]
    assert result.stderr == "KeeperErrorCode = ConnectionLoss for /\n"
    result = run_kcli("zookeeper-shell", connect, input="get /a\nsync /b\n", timeout=60)
    assert result.lines[1:] == ["Welcome to ZooKeeper!", "JLine support is disabled", "Sync has failed. rc=-4"]
    assert result.stderr == "KeeperErrorCode = ConnectionLoss for /a\n"
    assert result.returncode == 0  # sync reports its failure as output


def test_a_watch_prints_its_event_when_it_fires(chroot):
    chroot.zk.create("/w", b"1")
    shell = ShellProcess(chroot.connect)
    try:
        shell.send("get -w /w")
        shell.read_until("1")
        chroot.zk.set("/w", b"2")
        # The default watcher prints the event: printMessage("WATCHER::"), printMessage(event).
        event = "WatchedEvent state:SyncConnected type:NodeDataChanged path:/w"
        assert shell.read_until(event)[-4:] == ["", "WATCHER::", "", event]
        shell.send("ls -w /")
        shell.read_until("[w]")
        chroot.zk.create("/x")
        event = "WatchedEvent state:SyncConnected type:NodeChildrenChanged path:/"
        assert shell.read_until(event)[-4:] == ["", "WATCHER::", "", event]
        # WhoAmICommand's lines; then GetConfigCommand prints /zookeeper/config's data.
        shell.send("whoami")
        assert shell.read_until("ip: 127.0.0.1")[-2:] == ["Auth scheme: User", "ip: 127.0.0.1"]
        shell.send("config")
        shell.send("quit")
        assert shell.process.wait(30) == 0
    finally:
        shell.stop()


def test_a_lost_server_fails_commands_until_it_returns(tmp_path):
    from tests.zookeeper_process import ZooKeeperProcess

    server = ZooKeeperProcess(tmp_path).start()
    shell = ShellProcess(server.connect)
    try:
        shell.send("ls /")
        shell.read_until("[zookeeper]")
        server.stop()
        # The watcher hears Disconnected (once); a command then fails with ConnectionLoss.
        disconnected = "WatchedEvent state:Disconnected type:None path:null"
        assert shell.read_until(disconnected)[-4:] == ["", "WATCHER::", "", disconnected]
        shell.send("ls /")
        assert shell.read_until("KeeperErrorCode = ConnectionLoss for /") == ["KeeperErrorCode = ConnectionLoss for /"]
        server.start()
        shell.send("ls /")
        assert shell.read_until("[zookeeper]") == CONNECTED + ["[zookeeper]"]
        shell.send("quit")
        assert shell.process.wait(30) == 0
    finally:
        shell.stop()
        server.stop()
