"""Durations: Go-style strings ("1m30s") in pod annotations, and the short human form
("5m", "2d3h") that kubectl shows in AGE columns."""

from __future__ import annotations

import re
from datetime import UTC, datetime

_UNIT = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration ("2s", "1m30s", "1.5h"); a bare number means seconds."""
    value = text.strip()
    if not value:
        raise ValueError("empty duration")
    try:
        return float(value)
    except ValueError:
        pass
    position = 0
    total = 0.0
    for match in _PART.finditer(value):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT[match.group(2)]
        position = match.end()
    if position != len(value):
        raise ValueError(f"invalid duration {text!r}")
    return total


def human_duration(seconds: float) -> str:
    """kubectl's HumanDuration: "45s", "5m10s", "3h", "2d5h", "400d"."""
    s = int(seconds)
    if s < 0:
        return "<invalid>"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    return f"{hours // 24 // 365}y"


def parse_timestamp(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
