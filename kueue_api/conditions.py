"""Kubernetes status conditions on plain objects: read and set them as meta.SetStatusCondition does.

lastTransitionTime moves only when the status flips, so rewriting an unchanged condition is a
no-op and a level-based reconciler can set conditions on every pass. The worker agent sets
them; the manager reads the copies' conditions with the same helpers.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kueue_api.timestamps import rfc3339

JsonObject = dict[str, Any]


def find_condition(obj: Mapping[str, Any] | None, kind: str) -> JsonObject | None:
    for condition in ((obj or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


def condition_true(obj: Mapping[str, Any] | None, kind: str) -> bool:
    condition = find_condition(obj, kind)
    return condition is not None and condition.get("status") == "True"


def set_condition(
    status: JsonObject,
    kind: str,
    value: bool,
    reason: str,
    message: str,
    now: datetime,
    generation: int | None = None,
) -> bool:
    """Set one condition in a status dict (mutated); True when anything changed."""
    wanted = "True" if value else "False"
    conditions: list[JsonObject] = list(status.get("conditions") or [])
    for index, condition in enumerate(conditions):
        if condition.get("type") != kind:
            continue
        if (
            condition.get("status") == wanted
            and condition.get("reason") == reason
            and condition.get("message") == message
        ):
            return False
        updated = dict(condition, status=wanted, reason=reason, message=message)
        if condition.get("status") != wanted:
            updated["lastTransitionTime"] = rfc3339(now)
        if generation is not None:
            updated["observedGeneration"] = generation
        conditions[index] = updated
        status["conditions"] = conditions
        return True
    added: JsonObject = {
        "type": kind,
        "status": wanted,
        "reason": reason,
        "message": message,
        "lastTransitionTime": rfc3339(now),
    }
    if generation is not None:
        added["observedGeneration"] = generation
    conditions.append(added)
    status["conditions"] = conditions
    return True
