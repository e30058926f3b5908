"""A Workload's status.admissionChecks as JSON: read, sync and change check states.

Pure functions over plain lists, used inside conflict-retried status writes (the engine's
`CheckStatus` is the same data, parsed; `to_status` converts for its rules). A state change
moves lastTransitionTime; rewriting the same state with a new message does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from kueue_api.timestamps import parse_time, rfc3339
from worker_agent.engine import CheckState, CheckStatus

JsonObject = dict[str, Any]

PENDING = CheckState.PENDING.value
READY = CheckState.READY.value
RETRY = CheckState.RETRY.value
REJECTED = CheckState.REJECTED.value


def check_states(workload: JsonObject) -> list[JsonObject]:
    return [dict(c) for c in (workload.get("status") or {}).get("admissionChecks") or []]


def find_check(workload: JsonObject, name: str) -> JsonObject | None:
    return next((c for c in check_states(workload) if c.get("name") == name), None)


def to_status(check: Mapping[str, Any]) -> CheckStatus:
    """One JSON check state as the engine's rules read it."""
    moment = parse_time(check.get("lastTransitionTime"))
    requeue_after = check.get("requeueAfterSeconds")
    retry_count = check.get("retryCount")
    return CheckStatus(
        name=str(check.get("name")),
        state=CheckState(str(check.get("state") or PENDING)),
        message=str(check.get("message") or ""),
        last_transition=None if moment is None else moment.timestamp(),
        requeue_after=None if requeue_after is None else int(requeue_after),
        retry_count=None if retry_count is None else int(retry_count),
    )


def statuses(workload: JsonObject) -> list[CheckStatus]:
    return [to_status(c) for c in check_states(workload)]


def synced(
    checks: Iterable[JsonObject], names: Sequence[str], now: datetime
) -> list[JsonObject] | None:
    """The list for exactly `names` (sorted): states kept, missing ones Pending, stale ones
    dropped (Kueue's syncAdmissionCheckConditions); None when nothing changes."""
    current = list(checks)
    by_name = {str(c.get("name")): c for c in current}
    wanted = [
        by_name.get(name)
        or {"name": name, "state": PENDING, "message": "", "lastTransitionTime": rfc3339(now)}
        for name in sorted(names)
    ]
    return None if wanted == current else wanted


def with_state(
    checks: Iterable[JsonObject],
    name: str,
    state: str,
    message: str,
    now: datetime,
    pod_set_updates: list[JsonObject] | None = None,
    requeue_after_seconds: int | None = None,
) -> list[JsonObject] | None:
    """`checks` with `name` set to `state`; None when it is absent or already so."""
    result = []
    changed = False
    for check in checks:
        if check.get("name") != name:
            result.append(check)
            continue
        updated = dict(check, state=state, message=message)
        if pod_set_updates:
            updated["podSetUpdates"] = pod_set_updates
        else:
            updated.pop("podSetUpdates", None)
        if requeue_after_seconds is not None:
            updated["requeueAfterSeconds"] = requeue_after_seconds
        if check.get("state") != state:
            updated["lastTransitionTime"] = rfc3339(now)
        changed = changed or updated != check
        result.append(updated)
    return result if changed else None


def reset_on_eviction(checks: Iterable[JsonObject], now: datetime) -> list[JsonObject]:
    """Every non-Pending check back to Pending, a Retry counting one more retry (Kueue's
    resetChecksOnEviction)."""
    result = []
    for check in checks:
        state = check.get("state")
        if state == PENDING:
            result.append(check)
            continue
        reset: JsonObject = {
            "name": check.get("name"),
            "state": PENDING,
            "message": f"Reset to Pending after eviction. Previously: {state}",
            "lastTransitionTime": rfc3339(now),
        }
        if check.get("requeueAfterSeconds") is not None:
            reset["requeueAfterSeconds"] = check["requeueAfterSeconds"]
        if state == RETRY:
            reset["retryCount"] = int(check.get("retryCount") or 0) + 1
        result.append(reset)
    return result


def all_ready(checks: Iterable[JsonObject]) -> bool:
    return all(c.get("state") == READY for c in checks)


def in_state(checks: Iterable[JsonObject], state: str) -> bool:
    return any(c.get("state") == state for c in checks)
