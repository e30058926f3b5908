"""Label and field selectors as kube-apiserver parses them from `?labelSelector=` and
`?fieldSelector=`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kueue_api.api_errors import ApiError, bad_request


@dataclass(frozen=True)
class Requirement:
    """One label requirement: key, operator (=, !=, in, notin, exists, !) and values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        if self.operator in ("=", "=="):
            return present and labels[self.key] == self.values[0]
        if self.operator == "!=":
            return not present or labels[self.key] != self.values[0]
        if self.operator == "in":
            return present and labels[self.key] in self.values
        if self.operator == "notin":
            return not present or labels[self.key] not in self.values
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if self.operator in ("gt", "lt"):
            if not present:
                return False
            try:
                value = int(labels[self.key])
                bound = int(self.values[0])
            except ValueError:
                return False
            return value > bound if self.operator == "gt" else value < bound
        return False


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^)]*)\)\s*$")
_CMP_RE = re.compile(rf"^\s*({_KEY})\s*(==|!=|=)\s*([-A-Za-z0-9_.]*)\s*$")
_EXISTS_RE = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part.strip()]


def parse_label_selector(text: str) -> tuple[Requirement, ...]:
    """Parse the string form (`a=b,c in (x,y),!d`); raise 400 on malformed input."""
    requirements: list[Requirement] = []
    for part in _split_top_level(text or ""):
        match = _SET_RE.match(part)
        if match:
            values = tuple(v.strip() for v in match.group(4).split(",") if v.strip())
            requirements.append(Requirement(match.group(1), match.group(3), values))
            continue
        match = _CMP_RE.match(part)
        if match:
            requirements.append(Requirement(match.group(1), match.group(3), (match.group(4),)))
            continue
        match = _EXISTS_RE.match(part)
        if match:
            operator = "!" if match.group(1) else "exists"
            requirements.append(Requirement(match.group(2), operator))
            continue
        raise bad_request(f"unable to parse requirement: invalid label selector {part.strip()!r}")
    return tuple(requirements)


def labels_match(requirements: tuple[Requirement, ...], labels: dict[str, str] | None) -> bool:
    present = labels or {}
    return all(requirement.matches(present) for requirement in requirements)


def selector_from_object(selector: dict[str, Any] | None) -> tuple[Requirement, ...]:
    """A metav1.LabelSelector (matchLabels + matchExpressions) as requirements."""
    if not selector:
        return ()
    requirements = [
        Requirement(key, "=", (str(value),))
        for key, value in (selector.get("matchLabels") or {}).items()
    ]
    operators = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expression in selector.get("matchExpressions") or []:
        operator = operators.get(expression.get("operator", ""))
        if operator is None:
            raise bad_request(f"invalid label selector operator {expression.get('operator')!r}")
        values = tuple(str(v) for v in expression.get("values") or ())
        requirements.append(Requirement(expression.get("key", ""), operator, values))
    return tuple(requirements)


# ---- field selectors -------------------------------------------------------------------------

FieldGetter = Callable[[dict[str, Any]], str]


def _path_getter(path: str) -> FieldGetter:
    parts = path.split(".")

    def get(obj: dict[str, Any]) -> str:
        value: Any = obj
        for part in parts:
            if not isinstance(value, dict):
                return ""
            value = value.get(part)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return get


# Fields every kind supports, and the extra ones kube-apiserver registers per resource.
COMMON_FIELDS = ("metadata.name", "metadata.namespace")
EXTRA_FIELDS: dict[str, tuple[str, ...]] = {
    "/pods": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "/nodes": ("spec.unschedulable",),
    "/namespaces": ("status.phase",),
    "/secrets": ("type",),
    "/events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "batch/jobs": ("status.successful",),
}


JOB_SUCCESSFUL = ("batch/jobs", "status.successful")
"""kube-apiserver's Job field `status.successful` is the Job's status.succeeded count."""


def _job_successful(obj: dict[str, Any]) -> str:
    return str(int((obj.get("status") or {}).get("succeeded") or 0))


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    equal: bool
    value: str
    getter: FieldGetter

    def matches(self, obj: dict[str, Any]) -> bool:
        return (self.getter(obj) == self.value) == self.equal


def parse_field_selector(text: str, resource_key: str, kind: str) -> tuple[FieldRequirement, ...]:
    requirements: list[FieldRequirement] = []
    allowed = COMMON_FIELDS + EXTRA_FIELDS.get(resource_key, ())
    for part in (text or "").split(","):
        if not part.strip():
            continue
        if "!=" in part:
            path, value = part.split("!=", 1)
            equal = False
        elif "==" in part:
            path, value = part.split("==", 1)
            equal = True
        elif "=" in part:
            path, value = part.split("=", 1)
            equal = True
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        path = path.strip()
        if path not in allowed:
            # Kinds with their own field label conversion (pods, jobs...) answer with its
            # error; the rest with apimachinery's default one.
            message = (
                f"field label not supported: {path}"
                if resource_key in EXTRA_FIELDS
                else f'"{path}" is not a known field selector: only "metadata.name", '
                '"metadata.namespace"'
            )
            raise ApiError(400, "BadRequest", message)
        getter = _job_successful if (resource_key, path) == JOB_SUCCESSFUL else _path_getter(path)
        requirements.append(FieldRequirement(path, equal, value.strip(), getter))
    return tuple(requirements)


def fields_match(requirements: tuple[FieldRequirement, ...], obj: dict[str, Any]) -> bool:
    return all(requirement.matches(obj) for requirement in requirements)
