"""Times as Kubernetes writes them: RFC 3339 in UTC, `Z`-suffixed.

metav1.Time has whole seconds, metav1.MicroTime (Leases, events.k8s.io) microseconds. isoformat
does this at a fraction of strftime's cost, and conditions, events and status writes all carry
one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def rfc3339(moment: datetime) -> str:
    """metav1.Time: whole seconds (a naive `moment` is taken as local time, as astimezone does)."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def micro_time(moment: datetime) -> str:
    """metav1.MicroTime: six fractional digits, always."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_time(value: Any) -> datetime | None:
    """A time as Kubernetes writes it, or None for anything else (absent, empty, malformed)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
