"""Encryption of stored kubeconfigs and keyed hashing of agent tokens."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from cryptography.fernet import Fernet, InvalidToken


class EncryptionKeyError(ValueError):
    """MKQ_ENCRYPTION_KEY is missing or not a Fernet key."""


class KubeconfigCipher:
    """Fernet encryption of kubeconfig text; the key never touches the database."""

    def __init__(self, key: str) -> None:
        try:
            self._fernet = Fernet(key.encode())
        except (ValueError, TypeError) as error:
            raise EncryptionKeyError(
                "MKQ_ENCRYPTION_KEY is not a Fernet key (32 url-safe base64 bytes); "
                "make one with: python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'"
            ) from error

    def encrypt(self, text: str) -> bytes:
        return self._fernet.encrypt(text.encode())

    def decrypt(self, token: bytes) -> str:
        try:
            return self._fernet.decrypt(token).decode()
        except InvalidToken as error:
            raise EncryptionKeyError(
                "a stored kubeconfig cannot be decrypted: MKQ_ENCRYPTION_KEY differs from the "
                "key it was stored with"
            ) from error


def new_token() -> str:
    return secrets.token_urlsafe(32)


_HMAC_PREFIX = "hmac-sha256:"


class TokenHasher:
    """Agent tokens as they are stored: an HMAC-SHA256 keyed by the server's secret.

    A stolen database alone (a dump, a backup) then neither gives a token nor lets one be
    checked offline: the key is derived from MKQ_ENCRYPTION_KEY, which never touches the
    database. Digests from before (plain sha256 hex) still match, and `needs_upgrade` tells
    the caller to store the keyed digest instead.
    """

    def __init__(self, secret: str) -> None:
        self._key = hmac.new(secret.encode(), b"mkq agent tokens v1", hashlib.sha256).digest()

    def digest(self, token: str) -> str:
        mac = hmac.new(self._key, token.encode(), hashlib.sha256).hexdigest()
        return _HMAC_PREFIX + mac

    def matches(self, token: str, stored: str) -> bool:
        if stored.startswith(_HMAC_PREFIX):
            return hmac.compare_digest(self.digest(token), stored)
        return hmac.compare_digest(hashlib.sha256(token.encode()).hexdigest(), stored)

    @staticmethod
    def needs_upgrade(stored: str) -> bool:
        return not stored.startswith(_HMAC_PREFIX)
