"""Continue tokens: opaque to clients, the last id of the previous page inside."""

from __future__ import annotations

import base64
import binascii

from manager.api.errors import ApiError


def encode_continue(last_id: int) -> str:
    return base64.urlsafe_b64encode(f"id:{last_id}".encode()).decode().rstrip("=")


def decode_continue(token: str | None) -> int:
    if not token:
        return 0
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        prefix, value = raw.split(":", 1)
        if prefix != "id":
            raise ValueError(prefix)
        return int(value)
    except (ValueError, binascii.Error, UnicodeDecodeError) as error:
        raise ApiError(400, "BadRequest", "the continue token is not valid", "continue") from error
