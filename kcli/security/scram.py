"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them (ScramFormatter,
ScramMessages, ScramCredentialUtils); sans I/O.

    client-first   n,[a=<authzid>],n=<saslname>,r=<client nonce>[,<extensions>]
    server-first   r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=<base64 GS2 header>,r=<nonce>,p=<base64 proof>
    server-final   v=<base64 server signature>  (or e=<error>)

    SaltedPassword  = Hi(password, salt, i)            (PBKDF2-HMAC)
    ClientKey       = HMAC(SaltedPassword, "Client Key")
    StoredKey       = H(ClientKey)
    ServerKey       = HMAC(SaltedPassword, "Server Key")
    AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
    ClientProof     = ClientKey XOR HMAC(StoredKey, AuthMessage)
    ServerSignature = HMAC(ServerKey, AuthMessage)

The server keeps only salt, StoredKey, ServerKey and iterations: the credential Kafka writes in
``/config/users/<user>`` as ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384  # Kafka's ScramMechanism.maxIterations


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    name: str
    hash_name: str

    def digest(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256")
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512")
MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
# Kafka's ScramMechanism type ids (DescribeUserScramCredentials, AlterUserScramCredentials).
MECHANISM_TYPES = {1: SCRAM_SHA_256, 2: SCRAM_SHA_512}
MECHANISM_TYPE_IDS = {m.name: t for t, m in MECHANISM_TYPES.items()}


class ScramError(ValueError):
    """A SCRAM message that does not parse or does not verify."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the server stores of a password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_text(self) -> str:
        """Kafka's ScramCredentialUtils.credentialToString."""
        return (f"salt={_b64(self.salt)},stored_key={_b64(self.stored_key)},"
                f"server_key={_b64(self.server_key)},iterations={self.iterations}")

    @classmethod
    def from_text(cls, text: str) -> ScramCredential:
        fields = dict(item.split("=", 1) for item in text.split(",") if "=" in item)
        try:
            return cls(_unb64(fields["salt"]), _unb64(fields["stored_key"]), _unb64(fields["server_key"]), int(fields["iterations"]))
        except (KeyError, ValueError) as e:
            raise ScramError(f"Invalid SCRAM credential: missing or bad {e}") from None


def salted_password(mechanism: ScramMechanism, password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password, salt, iterations)


def client_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return mechanism.hmac(salted, b"Client Key")


def server_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return mechanism.hmac(salted, b"Server Key")


def credential_from_salted(mechanism: ScramMechanism, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    return ScramCredential(salt, mechanism.digest(client_key(mechanism, salted)), server_key(mechanism, salted), iterations)


def new_salt() -> bytes:
    """A random salt for a new credential."""
    return secrets.token_bytes(32)


def generate_credential(mechanism: ScramMechanism, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None) -> ScramCredential:
    """A new credential for ``password`` with a random salt (Kafka's ScramFormatter.generateCredential)."""
    salt = salt if salt is not None else new_salt()
    return credential_from_salted(mechanism, salted_password(mechanism, password.encode(), salt, iterations), salt, iterations)


def nonce() -> str:
    """A printable nonce without commas."""
    return secrets.token_urlsafe(24)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (ValueError, TypeError):
        raise ScramError("invalid base64") from None


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


# -- messages ----------------------------------------------------------------------------------

_SASLNAME = r"(?:[\x21-\x2B\x2D-\x3C\x3E-\x7E]|=2C|=3D)+"
_VALUE = r"[\x01-\x2B\x2D-\x7F]+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_EXTENSIONS = rf"(,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(rf"n,(a=(?P<authzid>{_SASLNAME}))?,(?P<bare>n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))")
_SERVER_FIRST = re.compile(rf"(m={_VALUE},)?r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>[A-Za-z0-9+/=]+),i=(?P<iterations>[0-9]+)(?P<extensions>{_EXTENSIONS})")
_CLIENT_FINAL = re.compile(rf"(?P<without_proof>c=(?P<channel>[A-Za-z0-9+/=]+),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})),p=(?P<proof>[A-Za-z0-9+/=]+)")
_SERVER_FINAL = re.compile(r"(e=(?P<error>[^,]+)|v=(?P<signature>[A-Za-z0-9+/=]+))(,.*)?")


def sasl_name(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def username(saslname: str) -> str:
    return saslname.replace("=2C", ",").replace("=3D", "=")


@dataclass(frozen=True, slots=True)
class ClientFirst:
    username: str
    nonce: str
    authzid: str | None
    gs2_header: str
    bare: str
    extensions: str

    @classmethod
    def parse(cls, data: bytes) -> ClientFirst:
        match = _CLIENT_FIRST.fullmatch(_text(data))
        if match is None:
            raise ScramError("Invalid SCRAM client first message format")
        authzid = username(match.group("authzid")) if match.group("authzid") else None
        header = _text(data)[: match.start("bare")]
        return cls(username(match.group("saslname")), match.group("nonce"), authzid, header, match.group("bare"), match.group("extensions"))

    @staticmethod
    def build(user: str, client_nonce: str) -> tuple[bytes, str]:
        """(message, bare) for a client."""
        bare = f"n={sasl_name(user)},r={client_nonce}"
        return f"n,,{bare}".encode(), bare


@dataclass(frozen=True, slots=True)
class ServerFirst:
    nonce: str
    salt: bytes
    iterations: int
    text: str

    @classmethod
    def parse(cls, data: bytes) -> ServerFirst:
        text = _text(data)
        match = _SERVER_FIRST.fullmatch(text)
        if match is None:
            raise ScramError("Invalid SCRAM server first message format")
        return cls(match.group("nonce"), _unb64(match.group("salt")), int(match.group("iterations")), text)

    @staticmethod
    def build(full_nonce: str, salt: bytes, iterations: int) -> str:
        return f"r={full_nonce},s={_b64(salt)},i={iterations}"


@dataclass(frozen=True, slots=True)
class ClientFinal:
    channel_binding: bytes
    nonce: str
    proof: bytes
    without_proof: str

    @classmethod
    def parse(cls, data: bytes) -> ClientFinal:
        match = _CLIENT_FINAL.fullmatch(_text(data))
        if match is None:
            raise ScramError("Invalid SCRAM client final message format")
        return cls(_unb64(match.group("channel")), match.group("nonce"), _unb64(match.group("proof")), match.group("without_proof"))


def _text(data: bytes) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError("SCRAM message is not UTF-8") from None


def auth_message(client_first_bare: str, server_first: str, client_final_without_proof: str) -> bytes:
    return f"{client_first_bare},{server_first},{client_final_without_proof}".encode()


def verify_proof(mechanism: ScramMechanism, credential: ScramCredential, message: bytes, proof: bytes) -> bool:
    """Whether ``proof`` shows knowledge of the password behind ``credential`` (constant time)."""
    signature = mechanism.hmac(credential.stored_key, message)
    if len(proof) != len(signature):
        return False
    return hmac.compare_digest(mechanism.digest(_xor(proof, signature)), credential.stored_key)


def server_signature(mechanism: ScramMechanism, credential: ScramCredential, message: bytes) -> bytes:
    return mechanism.hmac(credential.server_key, message)


def client_proof(mechanism: ScramMechanism, salted: bytes, message: bytes) -> bytes:
    key = client_key(mechanism, salted)
    return _xor(key, mechanism.hmac(mechanism.digest(key), message))


def client_final(mechanism: ScramMechanism, password: str, client_first_bare: str, first: ServerFirst) -> tuple[bytes, bytes]:
    """(client-final message, the server signature to expect) for a client."""
    without_proof = f"c={_b64(b'n,,')},r={first.nonce}"
    salted = salted_password(mechanism, password.encode(), first.salt, first.iterations)
    message = auth_message(client_first_bare, first.text, without_proof)
    proof = client_proof(mechanism, salted, message)
    expected = mechanism.hmac(server_key(mechanism, salted), message)
    return f"{without_proof},p={_b64(proof)}".encode(), expected


def parse_server_final(data: bytes) -> tuple[str | None, bytes | None]:
    """(error, signature) of a server-final message."""
    match = _SERVER_FINAL.fullmatch(_text(data))
    if match is None:
        raise ScramError("Invalid SCRAM server final message format")
    if match.group("error"):
        return match.group("error"), None
    return None, _unb64(match.group("signature"))
