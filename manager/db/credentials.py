"""Encryption of stored kubeconfigs and hashing of agent tokens."""

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


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(token: str, digest: str) -> bool:
    return hmac.compare_digest(token_digest(token), digest)
