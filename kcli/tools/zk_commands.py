"""zkCli's commands (ZooKeeper 3.8's ``org.apache.zookeeper.cli.*Command``) over a kazoo client.

Each command takes the shell and its words (the command's name first), parses them as the Java
command does (Commons CLI, then its argument checks), runs it and prints what the Java command
prints: results on stdout, ``Created /x`` and warnings on stderr. A failure is a ``CliError``
whose message and exit code are ZooKeeper's. The text and argument rules are in
``kcli.tools.zk_text``; the session, the prompt and the built-in commands (``quit``,
``connect``, ``history``...) in ``kcli.tools.zk_cli``.

kazoo has no call for some of ZooKeeper's operations (getEphemerals, getAllChildrenNumber,
container and TTL nodes); those go through kazoo's request queue as the requests ZooKeeper's
jute schema defines (``zookeeper.jute``).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from kazoo import exceptions as kz
from kazoo.protocol.serialization import Create2, GetData, read_string, write_string
from kazoo.security import ACL, Id

from kcli.java_compat import parse_int, parse_long
from kcli.tools.zk_text import (
    CONNECTION_LOSS,
    EPHEMERAL_ON_LOCAL_SESSION,
    INVALID_ACL,
    NO_NODE,
    CliError,
    acl_lines,
    java_list,
    keeper_message,
    parse_acl,
    parse_options,
    stat_lines,
    validate_path,
    wrapper_message,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from kcli.tools.zk_cli import Shell

# ZooKeeper's version line for ``version``: the 3.8.4 build Kafka 3.9 ships (its
# Version.getFullVersion()).
ZOOKEEPER_FULL_VERSION = "3.8.4-9316c2a7a97e1666d8f4593f34dd6fc36ecc436c, built on 2024-02-12 22:16 UTC"
# EphemeralType.TTL.maxValue(): the low 40 bits of an ephemeral owner.
MAX_TTL = 0x000000FFFFFFFFFF
OPEN_ACL_UNSAFE = [ACL(31, Id("world", "anyone"))]
# CreateMode flags
PERSISTENT, EPHEMERAL, PERSISTENT_SEQUENTIAL, EPHEMERAL_SEQUENTIAL, CONTAINER = 0, 1, 2, 3, 4
PERSISTENT_WITH_TTL, PERSISTENT_SEQUENTIAL_WITH_TTL = 5, 6


class ConnectionLossError(CliError):
    """The session could not be reached for an operation on ``path``."""

    def __init__(self, path: str | None) -> None:
        super().__init__(keeper_message(CONNECTION_LOSS, path), code=CONNECTION_LOSS)


def error_code(error: Exception) -> int:
    """ZooKeeper's error code for one of kazoo's failures (a closed or timed-out connection is a
    connection loss, as the Java client reports it)."""
    code = getattr(error, "code", None)
    return code if isinstance(code, int) else CONNECTION_LOSS


def _failure(error: Exception, path: str | None) -> CliError:
    if isinstance(error, ConnectionLossError):
        return error
    code = error_code(error)
    return CliError(wrapper_message(code, path), code=code)


_KAZOO_FAILURES = (kz.KazooException, kz.ZookeeperError)


def _run(shell: Shell, path: str | None, call: Callable[[KazooClient], object]) -> object:
    """``call(client)`` for an operation on ``path``; a ZooKeeper error becomes the CliError the
    Java command throws (``CliWrapperException``)."""
    client = shell.zk(path)
    try:
        return call(client)
    except _KAZOO_FAILURES as error:
        raise _failure(error, path) from None
    except shell.timeout_errors:
        raise ConnectionLossError(path) from None


# -- requests kazoo has no call for (zookeeper.jute) ----------------------------------------------


def _submit(client: KazooClient, request) -> object:
    result = client.handler.async_result()
    client._call(request, result)
    return result.get()


def _server_path(client: KazooClient, path: str) -> str:
    """The chrooted path, as ZooKeeper.prependChroot makes it."""
    if not client.chroot:
        return path
    return client.chroot if path == "/" else client.chroot + path


class _GetEphemerals(NamedTuple("_GetEphemerals", [("prefix", str)])):
    type = 103

    def serialize(self) -> bytes:
        return bytes(write_string(self.prefix))

    @classmethod
    def deserialize(cls, data, offset):
        (count,) = struct.unpack_from("!i", data, offset)
        offset += 4
        paths = []
        for _ in range(max(count, 0)):
            path, offset = read_string(data, offset)
            paths.append(path)
        return paths


class _GetAllChildrenNumber(NamedTuple("_GetAllChildrenNumber", [("path", str)])):
    type = 104

    def serialize(self) -> bytes:
        return bytes(write_string(self.path))

    @classmethod
    def deserialize(cls, data, offset):
        return struct.unpack_from("!i", data, offset)[0]


class _WhoAmI(NamedTuple("_WhoAmI", [])):
    type = 107

    def __bool__(self) -> bool:
        return True  # kazoo reads an answer only for a true request; an empty tuple is false

    def serialize(self) -> bytes:
        return b""

    @classmethod
    def deserialize(cls, data, offset):
        (count,) = struct.unpack_from("!i", data, offset)
        offset += 4
        infos = []
        for _ in range(max(count, 0)):
            scheme, offset = read_string(data, offset)
            user, offset = read_string(data, offset)
            infos.append((scheme, user))
        return infos


class _CreateContainer(Create2):
    """CreateRequest under the createContainer op code; answered with a Create2Response."""

    type = 19


class _CreateTTL(NamedTuple("_CreateTTL", [("path", str), ("data", bytes | None), ("acl", list), ("flags", int), ("ttl", int)])):
    type = 21

    def serialize(self) -> bytes:
        body = bytearray(Create2(self.path, self.data, self.acl, self.flags).serialize())
        body += struct.pack("!q", self.ttl)
        return bytes(body)

    deserialize = Create2.deserialize


# -- the commands ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    name: str
    options: str  # the option string ZooKeeper's usage lists
    run: Callable[[Shell, list[str]], None] | None  # None: listed by ZooKeeper, not served here

    @property
    def usage(self) -> str:
        return f"{self.name} {self.options}"


def _usage(name: str) -> CliError:
    return CliError(COMMANDS[name].usage)


def _deprecated_watch_argument(shell: Shell, spec: Mapping[str, bool], words: list[str], args: list[str], message: str):
    """``retainCompatibility`` of ls/get/stat: ``cmd path watch`` is read as ``cmd -w path`` (the
    third word becomes ``-w``, whatever it was)."""
    if len(args) <= 2:
        return None
    shell.err(message)
    words[2] = "-w"
    return parse_options(spec, words)


def _acl_option(shell: Shell, text: str) -> list[ACL]:
    """``AclParser.parse``."""
    return [ACL(perms, Id(scheme, identity)) for scheme, identity, perms in parse_acl(text, shell.err)]


def _check_acl(shell: Shell, acl: list[ACL]) -> None:
    """ZooKeeper.validateACL, after the path's check: an empty list is refused before any request
    (an InvalidACLException without a path, printed by CreateCommand and then wrapped)."""
    if not acl:
        shell.err(keeper_message(INVALID_ACL, None))
        raise CliError(wrapper_message(INVALID_ACL, "null"), code=INVALID_ACL)


def _int_option(value: str | None, default: int) -> int:
    """``Integer.parseInt`` of a ``-v`` value. Java lets its NumberFormatException escape (a stack
    trace); here it is the same exception's one line."""
    if value is None:
        return default
    try:
        return parse_int(value)
    except ValueError as error:
        raise CliError(f"java.lang.NumberFormatException: {error}") from None


def _watcher(shell: Shell, watch: bool):
    return shell.watch_callback if watch else None


_LS = {"?": False, "s": False, "w": False, "R": False}


def ls(shell: Shell, words: list[str]) -> None:
    options, args = parse_options(_LS, words)
    if "?" in options:
        # HelpFormatter.printHelp("ls [options] path", options), on stdout.
        shell.lines(["usage: ls [options] path", " -?   help", " -R   recurse", " -s   stat", " -w   watch"])
    again = _deprecated_watch_argument(shell, _LS, words, args, "'ls path [watch]' has been deprecated. Please use 'ls [-w] path' instead.")
    if again is not None:
        options, args = again
    if len(args) < 2:
        raise _usage("ls")
    path = args[1]
    validate_path(path)
    watch = _watcher(shell, "w" in options)
    if "R" in options:
        _visit_subtree(shell, path, watch, shell.line)
        return
    if "s" in options:
        children, stat = _run(shell, path, lambda zk: zk.get_children(path, watch=watch, include_data=True))
    else:
        children, stat = _run(shell, path, lambda zk: zk.get_children(path, watch=watch)), None
    shell.line(java_list(sorted(children)))
    if stat is not None:
        shell.lines(stat_lines(stat))


def _visit_subtree(shell: Shell, root: str, watch, visit: Callable[[str], None]) -> None:
    """``ZKUtil.visitSubTreeDFS``: the root (which must exist), then each node's sorted children
    before descending into them, in order; a node deleted meanwhile is skipped."""
    _run(shell, root, lambda zk: zk.get(root, watch=watch))
    visit(root)
    stack = [root]
    while stack:
        path = stack.pop()
        try:
            children = sorted(_run(shell, path, lambda zk, path=path: zk.get_children(path, watch=watch)))
        except CliError as error:
            if error.code == NO_NODE:
                continue
            raise
        prefix = path if path == "/" else path + "/"
        for child in children:
            visit(prefix + child)
        stack.extend(prefix + child for child in reversed(children))


_GET = {"s": False, "w": False}


def get(shell: Shell, words: list[str]) -> None:
    options, args = parse_options(_GET, words)
    if len(args) < 2:
        raise _usage("get")
    again = _deprecated_watch_argument(shell, _GET, words, args, "'get path [watch]' has been deprecated. Please use 'get [-s] [-w] path' instead.")
    if again is not None:
        options, args = again
    path = args[1]
    validate_path(path)
    data, stat = _run(shell, path, lambda zk: zk.get(path, watch=_watcher(shell, "w" in options)))
    shell.line("null" if data is None else data.decode("utf-8", errors="replace"))
    if "s" in options:
        shell.lines(stat_lines(stat))


_STAT = {"w": False}


def stat(shell: Shell, words: list[str]) -> None:
    options, args = parse_options(_STAT, words)
    if len(args) < 2:
        raise _usage("stat")
    again = _deprecated_watch_argument(shell, _STAT, words, args, "'stat path [watch]' has been deprecated. Please use 'stat [-w] path' instead.")
    if again is not None:
        options, args = again
    path = args[1]
    validate_path(path)
    found = _run(shell, path, lambda zk: zk.exists(path, watch=_watcher(shell, "w" in options)))
    if found is None:
        raise CliError(wrapper_message(NO_NODE, path), code=NO_NODE)
    shell.lines(stat_lines(found))


def create(shell: Shell, words: list[str]) -> None:
    options, args = parse_options({"e": False, "s": False, "c": False, "t": True}, words)
    if len(args) < 2:
        raise _usage("create")
    ephemeral, sequential, container, ttl_given = ("e" in options), ("s" in options), ("c" in options), ("t" in options)
    if container and (ephemeral or sequential):
        raise CliError("-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.")
    ttl = 0
    if ttl_given:
        try:
            ttl = parse_long(options["t"] or "")
        except ValueError:
            raise CliError("-t argument must be a long value") from None
        if ephemeral:
            raise CliError("TTLs cannot be used with Ephemeral znodes")
        if container:
            raise CliError("TTLs cannot be used with Container znodes")
    if ephemeral:
        flags = EPHEMERAL_SEQUENTIAL if sequential else EPHEMERAL
    elif sequential:
        flags = PERSISTENT_SEQUENTIAL_WITH_TTL if ttl_given else PERSISTENT_SEQUENTIAL
    elif container:
        flags = CONTAINER
    else:
        flags = PERSISTENT_WITH_TTL if ttl_given else PERSISTENT
    if ttl_given and not 0 < ttl <= MAX_TTL:
        raise CliError(f"ttl must be positive and cannot be larger than: {MAX_TTL}")
    path = args[1]
    data = args[2].encode("utf-8") if len(args) > 2 else None
    acl = OPEN_ACL_UNSAFE
    if len(args) > 3:
        acl = _acl_option(shell, args[3])
    validate_path(path, sequential=flags in (PERSISTENT_SEQUENTIAL, EPHEMERAL_SEQUENTIAL, PERSISTENT_SEQUENTIAL_WITH_TTL))
    _check_acl(shell, acl)

    def call(zk: KazooClient) -> str:
        if flags in (PERSISTENT, EPHEMERAL, PERSISTENT_SEQUENTIAL, EPHEMERAL_SEQUENTIAL):
            return zk.create(path, data, acl=acl, ephemeral=ephemeral, sequence=sequential)
        server_path = _server_path(zk, path)
        if flags == CONTAINER:
            created, _stat = _submit(zk, _CreateContainer(server_path, data, acl, flags))
        else:
            created, _stat = _submit(zk, _CreateTTL(server_path, data, acl, flags, ttl))
        return zk.unchroot(created)

    try:
        created = _run(shell, path, call)
    except CliError as error:
        if error.code == INVALID_ACL:
            shell.err(keeper_message(INVALID_ACL, path))
        elif error.code == EPHEMERAL_ON_LOCAL_SESSION:
            shell.err("Unable to create ephemeral node on a local session")
        raise
    shell.err(f"Created {created}")


def set_(shell: Shell, words: list[str]) -> None:
    options, args = parse_options({"s": False, "v": True}, words)
    if len(args) < 3:
        raise _usage("set")
    path, data = args[1], args[2].encode("utf-8")
    version = _int_option(options.get("v"), -1)
    validate_path(path)
    result = _run(shell, path, lambda zk: zk.set(path, data, version=version))
    if "s" in options:
        shell.lines(stat_lines(result))


def delete(shell: Shell, words: list[str]) -> None:
    options, args = parse_options({"v": True}, words)
    if len(args) < 2:
        raise _usage("delete")
    if len(args) > 2:
        # The old 'delete path version' form: the version word is ignored.
        shell.err("'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.")
    path = args[1]
    version = _int_option(options.get("v"), -1)
    validate_path(path)
    _run(shell, path, lambda zk: zk.delete(path, version=version))


def deleteall(shell: Shell, words: list[str]) -> None:
    options, args = parse_options({"b": True}, words)
    if len(args) < 2:
        raise CliError(f"{words[0]} {COMMANDS['deleteall'].options}")
    if words[0] == "rmr":
        # ZooKeeper 3.5's alias (Kafka 2.8's shell); 3.6 removed it.
        shell.err("The command 'rmr' has been deprecated. Please use 'deleteall' instead.")
    try:
        batch = parse_int(options["b"] or "") if "b" in options else 1000
    except ValueError:
        raise CliError("-b argument must be an int value") from None
    path = args[1]
    validate_path(path)
    tree = _subtree_breadth_first(shell, path)
    if batch <= 0:
        for node in reversed(tree):
            _run(shell, node, lambda zk, node=node: zk.delete(node))
        return
    if not _delete_in_batches(shell, path, tree, batch):
        shell.err("Failed to delete some node(s) in the subtree!")


def _subtree_breadth_first(shell: Shell, root: str) -> list[str]:
    """``ZKUtil.listSubTreeBFS``: the root and every node below it, level by level."""
    tree, queue = [root], deque([root])
    while queue:
        node = queue.popleft()
        for child in _run(shell, node, lambda zk, node=node: zk.get_children(node)):
            child_path = ("" if node == "/" else node) + "/" + child
            tree.append(child_path)
            queue.append(child_path)
    return tree


def _delete_in_batches(shell: Shell, root: str, tree: Sequence[str], batch: int) -> bool:
    """``ZKUtil.deleteInBatch``: leaves first, ``batch`` deletes per multi; stops at the first
    multi that fails and answers False."""
    nodes = list(reversed(tree))
    for start in range(0, len(nodes), batch):

        def commit(zk: KazooClient, chunk=nodes[start:start + batch]) -> list:
            transaction = zk.transaction()
            for node in chunk:
                transaction.delete(node)
            return transaction.commit()

        results = _run(shell, root, commit)
        if any(isinstance(result, Exception) for result in results):
            return False
    return True


def get_acl(shell: Shell, words: list[str]) -> None:
    options, args = parse_options({"s": False}, words)
    if len(args) < 2:
        raise _usage("getAcl")
    path = args[1]
    validate_path(path)
    acls, found = _run(shell, path, lambda zk: zk.get_acls(path))
    for acl in acls:
        shell.lines(acl_lines(acl.id.scheme, acl.id.id, acl.perms))
    if "s" in options:
        shell.lines(stat_lines(found))


def sync(shell: Shell, words: list[str]) -> None:
    _options, args = parse_options({}, words)
    if len(args) < 2:
        raise _usage("sync")
    path = args[1]
    validate_path(path)
    # SyncCommand reports the callback's result code on stdout, failures included.
    try:
        shell.zk(path).sync(path)
    except ConnectionLossError:
        code = CONNECTION_LOSS
    except _KAZOO_FAILURES as error:
        code = error_code(error)
    except shell.timeout_errors:
        code = CONNECTION_LOSS
    else:
        code = 0
    shell.line("Sync is OK" if code == 0 else f"Sync has failed. rc={code}")


def get_ephemerals(shell: Shell, words: list[str]) -> None:
    _options, args = parse_options({}, words)
    # ZooKeeper.getEphemerals sends the prefix as given: no chroot is added, and the answer is
    # the server's full paths.
    prefix = args[1] if len(args) > 1 else "/"
    validate_path(prefix)
    paths = _run(shell, prefix, lambda zk: _submit(zk, _GetEphemerals(prefix)))
    shell.line(java_list(paths))


def get_all_children_number(shell: Shell, words: list[str]) -> None:
    _options, args = parse_options({}, words)
    if len(args) < 2:
        raise _usage("getAllChildrenNumber")
    path = args[1]
    validate_path(path)
    shell.line(str(_run(shell, path, lambda zk: _submit(zk, _GetAllChildrenNumber(_server_path(zk, path))))))


def version(shell: Shell, words: list[str]) -> None:
    _options, args = parse_options({}, words)
    if len(args) > 1:
        raise _usage("version")
    shell.line(f"ZooKeeper CLI version: {ZOOKEEPER_FULL_VERSION}")


def close(shell: Shell, words: list[str]) -> None:
    shell.close()


def addauth(shell: Shell, words: list[str]) -> None:
    _options, args = parse_options({}, words)
    if len(args) < 2:
        raise _usage("addauth")
    credential = args[2] if len(args) > 2 else ""
    _run(shell, "/", lambda zk: zk.add_auth(args[1], credential))


def set_acl(shell: Shell, words: list[str]) -> None:
    options, args = parse_options({"s": False, "v": True, "R": False}, words)
    if len(args) < 3:
        raise _usage("setAcl")
    path = args[1]
    acl = _acl_option(shell, args[2])
    version = _int_option(options.get("v"), -1)
    validate_path(path)
    if "R" in options:

        def set_one(node: str) -> None:
            # SetAclCommand prints a node's failure (KeeperException.getMessage) and goes on.
            if not acl:
                shell.line(keeper_message(INVALID_ACL, None))
                return
            try:
                shell.zk(node).set_acls(node, acl, version=version)
            except _KAZOO_FAILURES as error:
                shell.line(keeper_message(error_code(error), node))

        _visit_subtree(shell, path, None, set_one)
        return
    if not acl:
        raise CliError(wrapper_message(INVALID_ACL, "null"), code=INVALID_ACL)
    result = _run(shell, path, lambda zk: zk.set_acls(path, acl, version=version))
    if "s" in options:
        shell.lines(stat_lines(result))


def whoami(shell: Shell, words: list[str]) -> None:
    parse_options({}, words)
    infos = _run(shell, None, lambda zk: _submit(zk, _WhoAmI()))
    shell.lines(["Auth scheme: User", *(f"{scheme}: {user}" for scheme, user in infos)])


# ZooDefs.CONFIG_NODE: read by getConfig without the chroot.
CONFIG_NODE = "/zookeeper/config"


def config(shell: Shell, words: list[str]) -> None:
    options, _args = parse_options({"s": False, "w": False, "c": False}, words)
    if "c" in options:
        raise CliError("kcli zookeeper-shell does not serve 'config -c' (ZooKeeper's zkCli does)")
    watch = _watcher(shell, "w" in options)
    data, found = _run(shell, CONFIG_NODE, lambda zk: _submit(zk, GetData(CONFIG_NODE, watch)))
    shell.line("null" if data is None else data.decode("utf-8", errors="replace"))
    if "s" in options:
        shell.lines(stat_lines(found))


def _commands() -> dict[str, Command]:
    served: dict[str, tuple[str, Callable[[Shell, list[str]], None] | None]] = {
        "addWatch": ("[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE", None),
        "addauth": ("scheme auth", addauth),
        "close": ("", close),
        "config": ("[-c] [-w] [-s]", config),
        "create": ("[-s] [-e] [-c] [-t ttl] path [data] [acl]", create),
        "delete": ("[-v version] path", delete),
        "deleteall": ("path [-b batch size]", deleteall),
        "delquota": ("[-n|-b|-N|-B] path", None),
        "get": ("[-s] [-w] path", get),
        "getAcl": ("[-s] path", get_acl),
        "getAllChildrenNumber": ("path", get_all_children_number),
        "getEphemerals": ("path", get_ephemerals),
        "listquota": ("path", None),
        "ls": ("[-s] [-w] [-R] path", ls),
        "reconfig": (
            (
                "[-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | "
                "[-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]"
            ),
            None,
        ),
        "removewatches": ("path [-c|-d|-a] [-l]", None),
        "set": ("[-s] [-v version] path data", set_),
        "setAcl": ("[-s] [-v version] [-R] path acl", set_acl),
        "setquota": ("-n|-b|-N|-B val path", None),
        "stat": ("[-w] path", stat),
        "sync": ("path", sync),
        "version": ("", version),
        "whoami": ("", whoami),
    }
    return {name: Command(name, options, run) for name, (options, run) in served.items()}


# CommandFactory's commands (ZooKeeper 3.8.4), by name.
COMMANDS: dict[str, Command] = _commands()
# ZooKeeper 3.5's deprecated alias of deleteall, served as Kafka 2.8's shell did; not listed in
# 3.8's usage.
ALIASES: dict[str, str] = {"rmr": "deleteall"}
