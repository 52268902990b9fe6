"""Test certificates made by ``scripts/make-test-certs`` (openssl): a CA, a server certificate for
localhost and 127.0.0.1, a client certificate (CN=client,OU=test,O=kcli)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "make-test-certs"


def make_certs(directory: Path, **env: str) -> Path:
    """``directory`` with ca.pem, server.keystore.pem and client.keystore.pem; ``env``: DAYS,
    KEY_PASSWORD, CLIENT_CN."""
    subprocess.run([str(SCRIPT), str(directory)], check=True, capture_output=True, env={**os.environ, **env}, timeout=60)
    return directory


def tls_overrides(certs: Path, listener: str | None = None) -> dict[str, str]:
    """A broker's PEM key store and trust store keys, broker-wide or for one listener."""
    prefix = f"listener.name.{listener.lower()}." if listener else ""
    return {
        f"{prefix}ssl.keystore.type": "PEM",
        f"{prefix}ssl.keystore.location": str(certs / "server.keystore.pem"),
        f"{prefix}ssl.truststore.type": "PEM",
        f"{prefix}ssl.truststore.location": str(certs / "ca.pem"),
    }
