"""The priority a new Workload gets from its job: Kueue's rule, in one place for the agent (jobs
and pod groups) and the manager (REST submissions and the manager cluster's jobs).

Kueue's order (pkg/controller/jobframework/reconciler.go, ExtractPriority, with
pkg/util/priority/priority.go):

1. the job's ``kueue.x-k8s.io/priority-class`` label names a WorkloadPriorityClass; one that
   does not exist stops the Workload from being made (WorkloadPriorityClassNotFound);
2. with no label, Kueue's webhook gives the job the WorkloadPriorityClass called ``default``
   when one exists (pkg/controller/jobframework/defaults.go, WorkloadPriorityClassDefaulting);
3. otherwise the first pod template's ``priorityClassName`` names a PriorityClass
   (scheduling.k8s.io), which must exist;
4. otherwise the PriorityClass marked ``globalDefault`` (the lowest of several, as a race can
   leave more than one);
5. otherwise priority 0 and no class.

Pure: the caller hands in the classes it knows, by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

WORKLOAD_PRIORITY_CLASS = "WorkloadPriorityClass"
POD_PRIORITY_CLASS = "PriorityClass"
DEFAULT_WORKLOAD_PRIORITY_CLASS = "default"
_GROUPS = {WORKLOAD_PRIORITY_CLASS: "kueue.x-k8s.io", POD_PRIORITY_CLASS: "scheduling.k8s.io"}


@dataclass(frozen=True)
class PriorityClassRef:
    """A Workload's ``spec.priorityClassRef``."""

    kind: str
    name: str

    @property
    def group(self) -> str:
        return _GROUPS[self.kind]

    def to_json(self) -> dict[str, str]:
        return {"group": self.group, "kind": self.kind, "name": self.name}

    @classmethod
    def named(cls, name: str | None, kind: str | None) -> PriorityClassRef | None:
        """The ref stored as a name and a kind (no kind: a WorkloadPriorityClass)."""
        return cls.from_json({"name": name, "kind": kind})

    @classmethod
    def from_json(cls, value: object) -> PriorityClassRef | None:
        if not isinstance(value, Mapping) or not value.get("name"):
            return None
        kind = value.get("kind")
        return cls(kind if kind in _GROUPS else WORKLOAD_PRIORITY_CLASS, str(value["name"]))


@dataclass(frozen=True)
class PodPriorityClass:
    value: int
    global_default: bool = False


@dataclass(frozen=True)
class Priority:
    ref: PriorityClassRef | None
    value: int


@dataclass(frozen=True)
class PriorityClassNotFound:
    """The class the job names does not exist (yet): no Workload until it does."""

    ref: PriorityClassRef

    @property
    def message(self) -> str:
        return f"{self.ref.kind} {self.ref.name} not found"


def pod_priority_class_name(pod_sets: Iterable[Mapping[str, Any]]) -> str | None:
    """The first ``priorityClassName`` among a Workload's podSets' templates."""
    for pod_set in pod_sets:
        name = ((pod_set.get("template") or {}).get("spec") or {}).get("priorityClassName")
        if name:
            return str(name)
    return None


def pod_priority_class(obj: Mapping[str, Any]) -> tuple[str, PodPriorityClass]:
    """A scheduling.k8s.io PriorityClass object as the rule reads it."""
    value = PodPriorityClass(int(obj.get("value") or 0), bool(obj.get("globalDefault")))
    return str((obj.get("metadata") or {}).get("name")), value


def resolve_priority(
    workload_class: str | None,
    pod_class: str | None,
    workload_classes: Mapping[str, int],
    pod_classes: Mapping[str, PodPriorityClass],
    *,
    default_workload_class: bool = True,
) -> Priority | PriorityClassNotFound:
    """The Workload's priority class and value; `workload_classes` maps each
    WorkloadPriorityClass to its value, `pod_classes` each PriorityClass. Without
    `default_workload_class` (the WorkloadPriorityClassDefaulting gate off) step 2 is skipped."""
    if workload_class:
        ref = PriorityClassRef(WORKLOAD_PRIORITY_CLASS, workload_class)
        if workload_class not in workload_classes:
            return PriorityClassNotFound(ref)
        return Priority(ref, workload_classes[workload_class])
    if default_workload_class and DEFAULT_WORKLOAD_PRIORITY_CLASS in workload_classes:
        return Priority(
            PriorityClassRef(WORKLOAD_PRIORITY_CLASS, DEFAULT_WORKLOAD_PRIORITY_CLASS),
            workload_classes[DEFAULT_WORKLOAD_PRIORITY_CLASS],
        )
    if pod_class:
        ref = PriorityClassRef(POD_PRIORITY_CLASS, pod_class)
        found = pod_classes.get(pod_class)
        return PriorityClassNotFound(ref) if found is None else Priority(ref, found.value)
    defaults = sorted((c.value, name) for name, c in pod_classes.items() if c.global_default)
    if defaults:
        value, name = defaults[0]
        return Priority(PriorityClassRef(POD_PRIORITY_CLASS, name), value)
    return Priority(None, 0)
