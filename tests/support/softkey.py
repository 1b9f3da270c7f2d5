"""A software WebAuthn authenticator for unit tests: a P-256 key that answers registration ("none" attestation) and
sign-in requests exactly as the WebAuthn spec lays the bytes out, so the server's real verification runs on them.
Its origin and challenge can be set wrong on purpose. (The browser tests use Chromium's virtual authenticator.)"""

import base64
import hashlib
import json
import os

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

UP, UV, AT = 0x01, 0x04, 0x40


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


class SoftKey:
    def __init__(self, rp_id: str = "testserver"):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(16)
        self.rp_id, self.count = rp_id, 0

    def _data(self, flags: int, attested: bool = False) -> bytes:
        self.count += 1
        data = hashlib.sha256(self.rp_id.encode()).digest() + bytes([flags]) + self.count.to_bytes(4, "big")
        if attested:
            numbers = self.key.public_key().public_numbers()
            cose = {1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")}
            data += b"\0" * 16 + len(self.credential_id).to_bytes(2, "big") + self.credential_id + cbor2.dumps(cose)
        return data

    @staticmethod
    def _client(kind: str, options: str, origin: str, challenge: str | None) -> bytes:
        given = json.loads(options)["challenge"]
        return json.dumps({"type": kind, "challenge": challenge or given, "origin": origin}).encode()

    def create(self, options: str, origin: str = "http://testserver", challenge: str | None = None) -> dict:
        client = self._client("webauthn.create", options, origin, challenge)
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": self._data(UP | UV | AT, True)})
        return self._answer({"clientDataJSON": b64u(client), "attestationObject": b64u(attestation)})

    def get(self, options: str, origin: str = "http://testserver", challenge: str | None = None) -> dict:
        client = self._client("webauthn.get", options, origin, challenge)
        data = self._data(UP | UV)
        signature = self.key.sign(data + hashlib.sha256(client).digest(), ec.ECDSA(hashes.SHA256()))
        return self._answer(
            {"clientDataJSON": b64u(client), "authenticatorData": b64u(data), "signature": b64u(signature)}
        )

    def _answer(self, response: dict) -> dict:
        """The PublicKeyCredential as JSON, the way the page's script posts it."""
        key = b64u(self.credential_id)
        return {"id": key, "rawId": key, "type": "public-key", "response": response, "clientExtensionResults": {}}
