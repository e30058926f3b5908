"""Continue tokens: opaque to clients, the last id of the previous page inside."""

from __future__ import annotations

import base64
import re
from typing import Annotated

from fastapi import Query

from manager.api.errors import ApiError

# What encode_continue writes, and nothing else (checked before decoding; int() alone would take
# "id: 5", other scripts' digits, and ids beyond the 64-bit column, an asyncpg error, a 500):
# base64url, unpadded, of "id:" ("aWQ6") and an id of 1 to 18 digits without a leading zero
# (ids below 10^18, which the table never reaches).
# Three digits make four characters. A digit is a byte 0x30-0x39, so a group's first character
# is M, N or O (digit 0-3, 4-7, 8-9) and its second D, T, j or z (the digit's two low bits; for
# a digit that ends the token alone, A, Q, g or w); the third and fourth are one of ten each.
_PAIR = "(?:[MN][DTjz]|O[DT])"  # the first two characters of a group of two or three digits
_PAIR_NOT_ZERO = "(?:M[Tjz]|N[DTjz]|O[DT])"  # ... whose first digit is not 0
_SECOND, _THIRD = "[AEIMQUYcgk]", "[w-z0-5]"
_ALONE = "(?:[MN][AQgw]|O[AQ])"  # a last digit alone
_ALONE_NOT_ZERO = "(?:M[Qgw]|N[AQgw]|O[AQ])"
_GROUP = f"{_PAIR}{_SECOND}{_THIRD}"
CONTINUE_PATTERN = (  # or empty: the first page
    f"^(?:aWQ6(?:MA|{_ALONE_NOT_ZERO}|{_PAIR_NOT_ZERO}{_SECOND}"
    f"(?:{_THIRD}(?:(?:{_GROUP}){{0,4}}(?:{_ALONE}|{_PAIR}{_SECOND})?|(?:{_GROUP}){{5}}))?))?$"
)
_TOKEN = re.compile(CONTINUE_PATTERN)

# The `continue` query parameter of the lists. The pattern is documented, not checked by
# FastAPI: decode_continue answers a forged token with its own message.
ContinueToken = Annotated[
    str | None,
    Query(
        alias="continue",
        description="The `continue` of the previous page (opaque)",
        json_schema_extra={"pattern": CONTINUE_PATTERN},
    ),
]


def encode_continue(last_id: int) -> str:
    return base64.urlsafe_b64encode(f"id:{last_id}".encode()).decode().rstrip("=")


def decode_continue(token: str | None) -> int:
    """The id after which the page starts; 400 naming `continue` for any token we did not
    write (a forged or garbled one)."""
    if not token:
        return 0
    if _TOKEN.fullmatch(token) is None:
        raise ApiError(400, "BadRequest", "the continue token is not valid", "continue")
    return int(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))[3:])
