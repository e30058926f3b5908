"""`mkq.dev/node-capacity`: admit a reservation only once the nodes have room for its pods.

Quota says a workload may run; it does not say the cluster can hold it now. Like Kueue's
ProvisioningRequest check, which waits for a cluster autoscaler to provide the nodes, this
check keeps a reservation from becoming an admission until the worker's schedulable nodes
(Ready, not cordoned) that carry the assigned flavors' nodeLabels (and the podSet's own
nodeSelector) have enough free allocatable for every pod: allocatable minus the requests of
the pods running there. Until then the check stays Pending with a message naming what is short;
a node added or freed is seen through the watches and the check turns Ready.

Room it promised stays promised until the admitted Workload's pods are on their nodes (its
PodsReady is True): until then its unbound pods are placed first. Taints are not compared.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

import kueue_api as api
from kueue_api.conditions import condition_true
from worker_agent import workloads as wl
from worker_agent.admission_checks import states
from worker_agent.admission_checks.base import AdmissionCheckController, CheckDecision, ClusterFacts
from worker_agent.cache import object_key
from worker_agent.engine.amounts import format_amount
from worker_agent.engine.build import pod_requests
from worker_agent.engine.tas.from_api import tas_node
from worker_agent.resources import NODES, PODS, RESOURCE_FLAVORS, WORKLOADS, ResourceType

JsonObject = dict[str, Any]

CONTROLLER_NAME = "mkq.dev/node-capacity"
READY_MESSAGE = "The schedulable nodes have room for every pod"
_DONE_PHASES = ("Succeeded", "Failed")
T = TypeVar("T")


@dataclass(frozen=True)
class PodSetNeed:
    """What one podSet of a reservation needs: `count` pods of `per_pod` on nodes with
    `node_labels`."""

    name: str
    count: int
    per_pod: Mapping[str, int]
    node_labels: Mapping[str, str]


@dataclass(frozen=True)
class PodUse:
    """What one pod takes from its node (nothing once it is done), and whose it is."""

    node_name: str | None
    requests: Mapping[str, int]
    done: bool
    owner_uids: frozenset[str]


class _Memo(Generic[T]):
    """What each cached object parses to, kept while the informer holds that same object.

    Informer caches replace an object on every change and never mutate one, so an object's
    identity is its version: a decision parses only what changed since the last one. Each
    pass keeps only the objects it saw, so the memo never outgrows the caches."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[Any, T]] = {}
        self._seen: dict[int, tuple[Any, T]] = {}

    def get(self, obj: Any, parse: Callable[[Any], T]) -> T:
        entry = self._seen.get(id(obj)) or self._kept.get(id(obj))
        if entry is None or entry[0] is not obj:
            entry = (obj, parse(obj))
        self._seen[id(obj)] = entry
        return entry[1]

    def end_pass(self) -> None:
        self._kept, self._seen = self._seen, {}


class Parsed:
    """Parsed nodes, pods and pod templates, reused from one decision to the next."""

    def __init__(self) -> None:
        self.nodes: _Memo[tuple[str, Mapping[str, str], Mapping[str, int]] | None] = _Memo()
        self.pods: _Memo[PodUse] = _Memo()
        self.templates: _Memo[Mapping[str, int]] = _Memo()


def _node_room(obj: JsonObject) -> tuple[str, Mapping[str, str], Mapping[str, int]] | None:
    node = tas_node(api.Node.model_validate(obj))
    if not node.ready or node.unschedulable:
        return None
    return node.name, dict(node.labels), dict(node.allocatable)


def _pod_use(obj: JsonObject) -> PodUse:
    spec = obj.get("spec") or {}
    node_name = spec.get("nodeName")
    done = (obj.get("status") or {}).get("phase") in _DONE_PHASES
    requests = {} if done or not node_name else pod_requests(api.PodSpec.model_validate(spec))
    return PodUse(node_name, requests, done, frozenset(_owner_uids(obj)))


def _template_requests(template: JsonObject) -> Mapping[str, int]:
    per_pod = pod_requests(api.PodSpec.model_validate(template))
    per_pod.pop("pods", None)
    return per_pod


def free_capacity(
    nodes: Iterable[JsonObject], pods: Iterable[JsonObject], parsed: Parsed | None = None
) -> dict[str, Any]:
    """Per schedulable node: (labels, free allocatable in Kueue units, `pods` included)."""
    parsed = parsed or Parsed()
    free: dict[str, Any] = {}
    for obj in nodes:
        room = parsed.nodes.get(obj, _node_room)
        if room is not None:
            name, labels, allocatable = room
            free[name] = (labels, dict(allocatable))
    for obj in pods:
        use = parsed.pods.get(obj, _pod_use)
        if use.done or use.node_name not in free:
            continue
        allocatable = free[use.node_name][1]
        for resource, value in use.requests.items():
            allocatable[resource] = allocatable.get(resource, 0) - value
        if "pods" in allocatable:
            allocatable["pods"] -= 1
    return free


def _fits(free: Mapping[str, int], per_pod: Mapping[str, int]) -> int:
    room = free.get("pods", 1 << 62)
    for resource, value in per_pod.items():
        if value > 0:
            room = min(room, max(0, free.get(resource, 0)) // value)
    return max(0, room)


def shortfall(needs: Iterable[PodSetNeed], free: dict[str, Any]) -> str | None:
    """Place each podSet's pods node by node; None when all fit, else what is short."""
    for need in needs:
        left = need.count
        matching = [
            name
            for name in sorted(free)
            if all(free[name][0].get(k) == v for k, v in need.node_labels.items())
        ]
        totals: dict[str, int] = {}
        for name in matching:
            allocatable = free[name][1]
            for resource in need.per_pod:
                totals[resource] = totals.get(resource, 0) + max(0, allocatable.get(resource, 0))
            placed = min(left, _fits(allocatable, need.per_pod))
            for resource, value in need.per_pod.items():
                allocatable[resource] = allocatable.get(resource, 0) - value * placed
            if "pods" in allocatable:
                allocatable["pods"] -= placed
            left -= placed
        if left > 0:
            return _short_message(need, need.count - left, totals)
    return None


def _short_message(need: PodSetNeed, placed: int, totals: Mapping[str, int]) -> str:
    where = json.dumps(dict(need.node_labels), sort_keys=True) if need.node_labels else "{}"
    text = (
        f"podSet {need.name}: room for {placed} of {need.count} pods on the schedulable nodes "
        f"matching {where}"
    )
    short = [
        f"{resource} (free {format_amount(resource, totals.get(resource, 0))}, "
        f"needed {format_amount(resource, value * need.count)})"
        for resource, value in sorted(need.per_pod.items())
        if value > 0 and totals.get(resource, 0) < value * need.count
    ]
    if short:
        return f"{text}; short of {', '.join(short)}"
    return f"{text}; no single node has room for another pod"


def pod_set_needs(
    workload: JsonObject, flavors: Mapping[str, JsonObject], parsed: Parsed | None = None
) -> list[PodSetNeed]:
    """Each reserved podSet: its count, per-pod requests and where its pods may go."""
    parsed = parsed or Parsed()
    admission = (workload.get("status") or {}).get("admission") or {}
    assigned = {p.get("name"): p for p in admission.get("podSetAssignments") or []}
    needs = []
    for pod_set in (workload.get("spec") or {}).get("podSets") or []:
        name = str(pod_set.get("name", "main"))
        assignment = assigned.get(name) or {}
        template = (pod_set.get("template") or {}).get("spec") or {}
        labels: dict[str, str] = dict(template.get("nodeSelector") or {})
        for flavor in dict.fromkeys((assignment.get("flavors") or {}).values()):
            spec = (flavors.get(str(flavor)) or {}).get("spec") or {}
            labels.update(spec.get("nodeLabels") or {})
        per_pod = dict(parsed.templates.get(template, _template_requests))
        count = int(assignment.get("count") or pod_set.get("count") or 1)
        needs.append(PodSetNeed(name, count, per_pod, labels))
    return needs


def _owner_uids(obj: JsonObject) -> set[str]:
    return {str(r.get("uid")) for r in (obj.get("metadata") or {}).get("ownerReferences") or []}


def claims(
    check_name: str,
    workloads: Iterable[JsonObject],
    pods: Iterable[JsonObject],
    flavors: Mapping[str, JsonObject],
    parsed: Parsed | None = None,
) -> list[PodSetNeed]:
    """The room promised to reservations this check let through whose pods are not all on
    nodes yet (check Ready, PodsReady not True): their pods not bound to a node (matched
    through a common owner), so that two reservations are not both told the same node is
    free."""
    parsed = parsed or Parsed()
    return _claims(check_name, workloads, bound_pods(pods, parsed), flavors, parsed)


def bound_pods(pods: Iterable[JsonObject], parsed: Parsed) -> dict[str, int]:
    """Per owner uid, how many of its pods are bound to a node."""
    bound: dict[str, int] = {}
    for pod in pods:
        use = parsed.pods.get(pod, _pod_use)
        if use.node_name:
            for uid in use.owner_uids:
                bound[uid] = bound.get(uid, 0) + 1
    return bound


def _claims(
    check_name: str,
    workloads: Iterable[JsonObject],
    bound: Mapping[str, int],
    flavors: Mapping[str, JsonObject],
    parsed: Parsed,
) -> list[PodSetNeed]:
    result: list[PodSetNeed] = []
    for workload in workloads:
        check = states.find_check(workload, check_name)
        if check is None or check.get("state") != states.READY:
            continue
        if not wl.has_quota_reservation(workload) or wl.is_evicted(workload):
            continue
        if condition_true(workload, wl.PODS_READY):
            continue
        placed = sum(bound.get(uid, 0) for uid in _owner_uids(workload))
        for need in pod_set_needs(workload, flavors, parsed):
            left = max(0, need.count - placed)
            placed -= need.count - left
            if left:
                result.append(replace(need, count=left))
    return result


class NodeCapacityCheck(AdmissionCheckController):
    """The `mkq.dev/node-capacity` check controller. The free room per node is recomputed
    only after a node or pod changed, and then only the changed objects are parsed again;
    each decision copies it and takes from it the room promised to other reservations."""

    controller_name = CONTROLLER_NAME
    watches: tuple[ResourceType, ...] = (NODES, PODS, WORKLOADS)

    def __init__(self) -> None:
        self._parsed = Parsed()
        self._room: tuple[object, dict[str, Any], dict[str, int]] | None = None

    def _free_and_bound(self, facts: ClusterFacts) -> tuple[dict[str, Any], dict[str, int]]:
        """Free room per node and bound pods per owner, recomputed only after a node or pod
        changed; the caller gets its own copy of the room to take from."""
        token = (facts.revision(NODES), facts.revision(PODS))
        if self._room is None or self._room[0] != token:
            parsed = self._parsed
            pods = list(facts.objects(PODS))
            free = free_capacity(facts.objects(NODES), pods, parsed)
            self._room = (token, free, bound_pods(pods, parsed))
            parsed.nodes.end_pass()
            parsed.pods.end_pass()
        _, free, bound = self._room
        return {name: (labels, dict(room)) for name, (labels, room) in free.items()}, bound

    def decide(self, workload: JsonObject, check: JsonObject, facts: ClusterFacts) -> CheckDecision:
        flavors = {
            str((f.get("metadata") or {}).get("name")): f for f in facts.objects(RESOURCE_FLAVORS)
        }
        parsed = self._parsed
        free, bound = self._free_and_bound(facts)
        name = str((check.get("metadata") or {}).get("name"))
        key = object_key(workload)
        others = (w for w in facts.objects(WORKLOADS) if object_key(w) != key)
        for promised in _claims(name, others, bound, flavors, parsed):
            shortfall([promised], free)  # takes the room it would use
        short = shortfall(pod_set_needs(workload, flavors, parsed), free)
        parsed.templates.end_pass()
        if short is None:
            return CheckDecision(states.READY, READY_MESSAGE)
        return CheckDecision(states.PENDING, short)
