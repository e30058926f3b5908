"""The schedules a CronJob accepts: kube-apiserver parses `spec.schedule` with robfig/cron's
standard parser (k8s.io/kubernetes pkg/apis/batch/validation: validateScheduleFormat), so a
schedule is five fields (minute, hour, day of month, month, day of week) or a descriptor
(@hourly ... @yearly, @every <duration>), optionally after a `TZ=` or `CRON_TZ=` prefix."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["schedule_problem", "time_zone_in_schedule"]


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # names of low, low + 1, ... (months, days of the week)

    def value(self, text: str) -> int | None:
        upper = text.upper()
        if upper in self.names:
            return self.low + self.names.index(upper)
        return int(text) if text.isdigit() else None


_FIELDS: Final = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field(
        "month",
        1,
        12,
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"),
    ),
    _Field("day of week", 0, 6, ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")),
)
_DESCRIPTORS: Final = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
# Go's time.ParseDuration: one or more decimal numbers with a unit each.
_GO_DURATION: Final = re.compile(
    r"^(\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))*$"
)
_TIME_ZONE_PREFIX: Final = re.compile(r"^(CRON_TZ|TZ)=\S*\s*")


def time_zone_in_schedule(schedule: str) -> bool:
    """Whether the schedule names its own time zone (`TZ=` or `CRON_TZ=`), which the API
    refuses beside `spec.timeZone` and otherwise only warns about."""
    return "TZ" in schedule


def _range_problem(field: _Field, part: str) -> str | None:
    """robfig/cron's getRange: `*` or `?`, a value or `a-b`, each with an optional `/step`."""
    body, slash, step = part.partition("/")
    if slash and not (step.isdigit() and int(step) > 0):
        return f"step of range should be a positive number: {part}"
    if body in ("*", "?"):
        return None
    first, dash, last = body.partition("-")
    start = field.value(first)
    end = field.value(last) if dash else start
    if start is None or end is None:
        bad = first if start is None else last
        return f"failed to parse int from {bad} in the {field.name} field: {part}"
    if start < field.low:
        return f"beginning of range ({start}) below minimum ({field.low}): {part}"
    if end > field.high:
        return f"end of range ({end}) above maximum ({field.high}): {part}"
    if start > end:
        return f"beginning of range ({start}) beyond end of range ({end}): {part}"
    return None


def schedule_problem(schedule: str) -> str | None:
    """What is wrong with a CronJob schedule, in robfig/cron's words where it has them; None
    when kube-apiserver would take it."""
    text = _TIME_ZONE_PREFIX.sub("", schedule.strip(), count=1)
    if not text:
        return "empty spec string"
    if text.startswith("@"):
        if text in _DESCRIPTORS:
            return None
        if text.startswith("@every "):
            duration = text.removeprefix("@every ").strip()
            return None if _GO_DURATION.match(duration) else f"failed to parse duration {text}"
        return f"unrecognized descriptor: {text}"
    fields = text.split()
    if len(fields) != len(_FIELDS):
        return f"expected exactly {len(_FIELDS)} fields, found {len(fields)}: {text}"
    for field, value in zip(_FIELDS, fields, strict=True):
        for part in value.split(","):
            problem = _range_problem(field, part)
            if problem is not None:
                return problem
    return None
