"""A SCRAM client written from RFC 5802 for the tests, independent of the broker's code."""

from __future__ import annotations

import base64
import hashlib
import hmac


class Scram:
    def __init__(self, mechanism: str, user: str, password: str, nonce: str = "fyko+d2lbbFgONRv9qkxdawL") -> None:
        self.hash = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
        self.user, self.password, self.nonce = user, password, nonce
        self.bare = f"n={user},r={nonce}"

    def first(self) -> bytes:
        return f"n,,{self.bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
        salted = hashlib.pbkdf2_hmac(self.hash, self.password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
        client_key = hmac.new(salted, b"Client Key", self.hash).digest()
        without_proof = f"c=biws,r={fields['r']}"
        message = f"{self.bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(hashlib.new(self.hash, client_key).digest(), message, self.hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        server_key = hmac.new(salted, b"Server Key", self.hash).digest()
        self.expected = b"v=" + base64.b64encode(hmac.new(server_key, message, self.hash).digest())
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
