"""SCRAM against RFC 7677's SCRAM-SHA-256 example exchange, Kafka's credential text form, and the
broker's SCRAM server fed the RFC's client messages."""

from __future__ import annotations

import base64

import pytest

from kcli.security import scram
from kcli.security.sasl_server import SaslAuthenticationFailed, ScramSaslServer

# RFC 7677, section 3: user "user", password "pencil".
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")


def test_the_client_side_gives_the_rfc_7677_messages():
    first = scram.ServerFirst.parse(SERVER_FIRST.encode())
    final, expected = scram.client_final(scram.SCRAM_SHA_256, "pencil", "n=user,r=rOprNGfwEbeRWgbNEkqO", first)
    assert final == CLIENT_FINAL
    assert b"v=" + base64.b64encode(expected) == SERVER_FINAL


def test_the_server_verifies_the_rfc_7677_proof(monkeypatch):
    credential = scram.generate_credential(scram.SCRAM_SHA_256, "pencil", 4096, SALT)
    server = ScramSaslServer("SCRAM-SHA-256", lambda user, mechanism: credential if user == "user" else None)
    monkeypatch.setattr(scram, "nonce", lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert server.evaluate(CLIENT_FIRST) == SERVER_FIRST.encode()
    assert server.evaluate(CLIENT_FINAL) == SERVER_FINAL
    assert server.complete and server.authorization_id == "user"


def test_a_proof_for_another_password_fails_without_naming_why(monkeypatch):
    credential = scram.generate_credential(scram.SCRAM_SHA_256, "not pencil", 4096, SALT)
    server = ScramSaslServer("SCRAM-SHA-256", lambda user, mechanism: credential)
    monkeypatch.setattr(scram, "nonce", lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    server.evaluate(CLIENT_FIRST)
    with pytest.raises(SaslAuthenticationFailed, match="^Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256$"):
        server.evaluate(CLIENT_FINAL)


def test_credentials_round_trip_through_kafkas_text_form():
    credential = scram.generate_credential(scram.SCRAM_SHA_512, "pw", 8192, b"salt")
    text = credential.to_text()
    assert text.startswith("salt=c2FsdA==,stored_key=") and text.endswith(",iterations=8192")
    assert scram.ScramCredential.from_text(text) == credential


def test_names_with_commas_and_equals_are_escaped():
    assert scram.sasl_name("a=b,c") == "a=3Db=2Cc"
    assert scram.ClientFirst.parse(b"n,,n=a=3Db=2Cc,r=abc").username == "a=b,c"
