"""What zkCli (ZooKeeper 3.8's ``ZooKeeperMain``) prints, and the argument rules it applies.

Written from ZooKeeper 3.8.4's sources (the version Kafka 3.9 bundles): ``cli/StatPrinter``,
``cli/CliWrapperException``, ``KeeperException.getMessage``, ``common/PathUtils.validatePath``,
jute's ``ToStringOutputArchive`` (an ACL's ``Id``), ``ZKUtil.getPermString``, ``cli/AclParser``,
``WatchedEvent.toString``, and the ``DefaultParser`` of Apache Commons CLI, which every command
parses its arguments with. Nothing here talks to a server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kcli.java_compat import date_to_string


class CliError(Exception):
    """ZooKeeper's ``CliException``: its message goes to stderr, its exit code is the shell's."""

    def __init__(self, message: str, exit_code: int = 1, code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.code = code  # the KeeperException code behind it, if any


# KeeperException.Code: the number on the wire -> getCodeMessage.
_CODE_MESSAGES: Mapping[int, str] = {
    0: "ok",
    -1: "SystemError",
    -2: "RuntimeInconsistency",
    -3: "DataInconsistency",
    -4: "ConnectionLoss",
    -5: "MarshallingError",
    -6: "Unimplemented",
    -7: "OperationTimeout",
    -8: "BadArguments",
    -13: "NewConfigNoQuorum",
    -14: "ReconfigInProgress",
    -100: "APIError",
    -101: "NoNode",
    -102: "NoAuth",
    -103: "BadVersion",
    -108: "NoChildrenForEphemerals",
    -110: "NodeExists",
    -111: "Directory not empty",
    -112: "Session expired",
    -113: "Invalid callback",
    -114: "InvalidACL",
    -115: "AuthFailed",
    -118: "Session moved",
    -119: "Not a read-only call",
    -120: "Ephemeral node on local session",
    -121: "No such watcher",
    -123: "Reconfig is disabled",
    -124: "Session closed because client failed to authenticate",
    -125: "Quota has exceeded",
    -127: "Op throttled due to high load",
}
CONNECTION_LOSS, NO_NODE, INVALID_ACL, EPHEMERAL_ON_LOCAL_SESSION = -4, -101, -114, -120

# CliWrapperException's own wording for some codes (the path follows).
_WRAPPER_MESSAGES: Mapping[int, str] = {
    -101: "Node does not exist: ",
    -108: "Ephemerals cannot have children: ",
    -110: "Node already exists: ",
    -111: "Node not empty: ",
    -119: "Not a read-only call: ",
    -114: "Acl is not valid : ",
    -102: "Insufficient permission : ",
    -8: "Arguments are not valid : ",
    -103: "version No is not valid : ",
    -125: "Quota has exceeded : ",
}


def keeper_message(code: int, path: str | None) -> str:
    """``KeeperException.getMessage``: ``KeeperErrorCode = NoNode for /x``."""
    text = _CODE_MESSAGES.get(code, f"Unknown error {code}")
    return f"KeeperErrorCode = {text}" if not path else f"KeeperErrorCode = {text} for {path}"


def wrapper_message(code: int, path: str | None) -> str:
    """``CliWrapperException``'s message for a KeeperException with ``code`` on ``path``."""
    if code == -14:
        return "Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)"
    prefix = _WRAPPER_MESSAGES.get(code)
    if prefix is not None:
        return f"{prefix}{path}"
    return keeper_message(code, path)


def stat_lines(stat) -> list[str]:
    """``StatPrinter.print``: the eleven ``name = value`` lines of a znode's Stat."""
    return [
        f"cZxid = 0x{stat.czxid & 0xFFFFFFFFFFFFFFFF:x}",
        f"ctime = {date_to_string(stat.ctime)}",
        f"mZxid = 0x{stat.mzxid & 0xFFFFFFFFFFFFFFFF:x}",
        f"mtime = {date_to_string(stat.mtime)}",
        f"pZxid = 0x{stat.pzxid & 0xFFFFFFFFFFFFFFFF:x}",
        f"cversion = {stat.cversion}",
        f"dataVersion = {stat.version}",
        f"aclVersion = {stat.aversion}",
        f"ephemeralOwner = 0x{stat.ephemeralOwner & 0xFFFFFFFFFFFFFFFF:x}",
        f"dataLength = {stat.dataLength}",
        f"numChildren = {stat.numChildren}",
    ]


def java_list(items: Sequence[str]) -> str:
    """``List.toString``: ``[a, b]``."""
    return "[" + ", ".join(items) + "]"


def validate_path(path: str, sequential: bool = False) -> None:
    """``PathUtils.validatePath``; a bad path is a ``MalformedPathException`` (exit 1)."""
    if sequential:
        path += "1"
    if not path:
        raise CliError("Path length must be > 0")
    if path[0] != "/":
        raise CliError("Path must start with / character")
    if len(path) == 1:
        return
    if path[-1] == "/":
        raise CliError("Path must not end with / character")
    reason = None
    last = "/"
    for i in range(1, len(path)):
        c = path[i]
        code = ord(c)
        if code == 0:
            reason = f"null character not allowed @{i}"
        elif c == "/" and last == "/":
            reason = f"empty node name specified @{i}"
        elif c == "." and last == ".":
            if path[i - 2] == "/" and (i + 1 == len(path) or path[i + 1] == "/"):
                reason = f"relative paths not allowed @{i}"
        elif c == ".":
            if path[i - 1] == "/" and (i + 1 == len(path) or path[i + 1] == "/"):
                reason = f"relative paths not allowed @{i}"
        elif 0 < code <= 0x1F or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xF8FF or code >= 0xFFF0:
            # Java sees a character above U+FFFF as two surrogates, which fall in D800-F8FF.
            reason = f"invalid character @{i}"
        if reason is not None:
            raise CliError(f'Invalid path string "{path}" caused by {reason}')
        last = c


# -- ACLs ------------------------------------------------------------------------------------------

READ, WRITE, CREATE, DELETE, ADMIN = 1, 2, 4, 8, 16


def perm_string(perms: int) -> str:
    """``ZKUtil.getPermString``: the letters of ``cdrwa`` a permission mask holds, in that order."""
    return "".join(letter for bit, letter in ((CREATE, "c"), (DELETE, "d"), (READ, "r"), (WRITE, "w"), (ADMIN, "a")) if perms & bit)


_JUTE_ESCAPES = {"\0": "%00", "\n": "%0A", "\r": "%0D", ",": "%2C", "}": "%7D", "%": "%25"}


def _jute_string(text: str | None) -> str:
    if text is None:
        return ""
    return "'" + "".join(_JUTE_ESCAPES.get(c, c) for c in text)


def acl_lines(scheme: str | None, identity: str | None, perms: int) -> list[str]:
    """GetAclCommand's two lines for one ACL: jute's ``Id.toString()`` (``'world,'anyone`` and a
    line end) followed by ``: cdrwa``."""
    return [f"{_jute_string(scheme)},{_jute_string(identity)}", f": {perm_string(perms)}"]


def parse_acl(text: str, err) -> list[tuple[str, str, int]]:
    """``AclParser.parse``: ``scheme:id:perm[,...]`` -> (scheme, id, perms); a malformed entry or
    letter is reported on ``err`` and skipped, as ZooKeeper does."""
    acls = []
    for entry in text.split(","):
        first, last = entry.find(":"), entry.rfind(":")
        if first == -1 or first == last:
            err(f"{entry} does not have the form scheme:id:perm")
            continue
        perms = 0
        for letter in entry[last + 1:]:
            bit = {"r": READ, "w": WRITE, "c": CREATE, "d": DELETE, "a": ADMIN}.get(letter)
            if bit is None:
                err(f"Unknown perm type: {letter}")
            else:
                perms |= bit
        acls.append((entry[:first], entry[first + 1:last], perms))
    return acls


# -- events ----------------------------------------------------------------------------------------

# kazoo's event type -> Watcher.Event.EventType
EVENT_TYPES: Mapping[str, str] = {
    "CREATED": "NodeCreated",
    "DELETED": "NodeDeleted",
    "CHANGED": "NodeDataChanged",
    "CHILD": "NodeChildrenChanged",
    "NONE": "None",
}


def watched_event(state: str, event_type: str, path: str | None) -> str:
    """``WatchedEvent.toString`` (3.8: no zxid)."""
    return f"WatchedEvent state:{state} type:{event_type} path:{path if path is not None else 'null'}"


# -- Apache Commons CLI's DefaultParser, for short options -----------------------------------------


def parse_options(spec: Mapping[str, bool], tokens: Sequence[str]) -> tuple[dict[str, str | None], list[str]]:
    """Commons CLI's ``DefaultParser.parse`` over options with one-letter names (``spec`` maps a
    name to whether it takes a value): the options seen (name -> value or None) and the other
    arguments in order, the command name first. Options may come anywhere, be concatenated
    (``-sR``) and carry their value attached (``-v5``); ``--`` ends them. Errors carry the text
    ZooKeeper prints for them, the exception's ``toString``."""
    options: dict[str, str | None] = {}
    args: list[str] = []
    pending: str | None = None  # an option still waiting for its value
    only_args = False
    for token in tokens:
        if pending is not None:
            if _is_option(spec, token):
                raise CliError(f"org.apache.commons.cli.MissingArgumentException: Missing argument for option: {pending}")
            options[pending] = token
            pending = None
            continue
        if only_args or token == "-" or not token.startswith("-"):
            args.append(token)
        elif token == "--":
            only_args = True
        elif token.startswith("--"):
            raise CliError(f"org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: {token}")
        else:
            name = token[1:]
            if name in spec:
                options[name] = None
                pending = name if spec[name] else None
                continue
            for i, letter in enumerate(name):
                if letter not in spec:
                    raise CliError(f"org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: {token}")
                options[letter] = None
                if spec[letter]:
                    rest = name[i + 1:]
                    if rest:
                        options[letter] = rest
                    else:
                        pending = letter
                    break
    if pending is not None:
        raise CliError(f"org.apache.commons.cli.MissingArgumentException: Missing argument for option: {pending}")
    return options, args


def _is_option(spec: Mapping[str, bool], token: str) -> bool:
    """``DefaultParser.isOption`` for short options: a token that would be read as one (so it
    cannot be another option's value); a negative number never is."""
    if not token.startswith("-") or len(token) < 2:
        return False
    if re.fullmatch(r"-[0-9]+(\.[0-9]*)?", token):
        return False
    name = token[1:].split("=", 1)[0]
    return name in spec or (name != "" and name[0] in spec)


# -- the line the interactive shell reads ----------------------------------------------------------

# MyCommandOptions.ARGS_PATTERN and QUOTED_PATTERN, with Java's ASCII-only \s and \S.
_ARGS = re.compile(r"[ \t\n\x0b\f\r]*([^\"'][^ \t\n\x0b\f\r]*|\"[^\"]*\"|'[^']*')[ \t\n\x0b\f\r]*")
_QUOTED = re.compile(r"^(['\"])(.*)(\1)$")


def split_command_line(line: str) -> list[str]:
    """``MyCommandOptions.parseCommand``: words, or a whole ``"quoted"`` / ``'quoted'`` string
    with its quotes removed."""
    words = []
    for match in _ARGS.finditer(line):
        word = match.group(1)
        if _QUOTED.match(word):
            word = word[1:-1]
        words.append(word)
    return words


def java_decode(text: str) -> int:
    """``Integer.decode``: decimal, ``0x``/``#`` hex or ``0`` octal, with an optional sign."""
    match = re.fullmatch(r"([+-]?)(0[xX][0-9a-fA-F]+|#[0-9a-fA-F]+|0[0-7]+|[0-9]+)", text)
    if match is None:
        raise ValueError(f'For input string: "{text}"')
    sign, digits = match.groups()
    if digits[:2] in ("0x", "0X"):
        value = int(digits, 16)
    elif digits.startswith("#"):
        value = int(digits[1:], 16)
    elif len(digits) > 1 and digits.startswith("0"):
        value = int(digits[1:], 8)
    else:
        value = int(digits)
    return -value if sign == "-" else value
