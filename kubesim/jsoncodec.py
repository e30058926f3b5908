"""JSON encoding for the wire.

The API server spends most of its time turning objects into bytes, so this uses orjson when it
is installed and falls back to the standard library otherwise. Both produce compact JSON.
"""

from __future__ import annotations

import importlib
import json
from types import ModuleType
from typing import Any

_orjson: ModuleType | None
try:  # pragma: no cover - depends on the environment
    _orjson = importlib.import_module("orjson")
except ImportError:  # pragma: no cover
    _orjson = None


def dumps(value: Any) -> bytes:
    """Compact JSON bytes."""
    if _orjson is not None:
        encoded: bytes = _orjson.dumps(value, option=_orjson.OPT_NON_STR_KEYS)
        return encoded
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def loads(data: bytes | str) -> Any:
    """Parse JSON bytes or text."""
    if _orjson is not None:
        return _orjson.loads(data)
    return json.loads(data)
