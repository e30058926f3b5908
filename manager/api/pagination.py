"""Continue tokens: opaque to clients, the last id of the previous page inside."""

from __future__ import annotations

import base64
import binascii
import re

from manager.api.errors import ApiError

# What encode_continue writes, and nothing else: int() alone would take "id: 5", "id:5_0",
# other scripts' digits, and ids beyond the 64-bit column (an asyncpg error, a 500).
_TOKEN = re.compile(r"id:(0|[1-9][0-9]{0,18})")
_MAX_ID = 2**63 - 1


def encode_continue(last_id: int) -> str:
    return base64.urlsafe_b64encode(f"id:{last_id}".encode()).decode().rstrip("=")


def decode_continue(token: str | None) -> int:
    """The id after which the page starts; 400 naming `continue` for any token we did not
    write (a forged or garbled one)."""
    if not token:
        return 0
    try:
        raw = base64.b64decode(
            token + "=" * (-len(token) % 4), altchars=b"-_", validate=True
        ).decode("ascii")
    except (ValueError, binascii.Error) as error:
        raise _invalid() from error
    found = _TOKEN.fullmatch(raw)
    if found is None or int(found[1]) > _MAX_ID:
        raise _invalid()
    return int(found[1])


def _invalid() -> ApiError:
    return ApiError(400, "BadRequest", "the continue token is not valid", "continue")
