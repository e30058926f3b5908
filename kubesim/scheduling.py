"""Pod placement rules shared by the scheduler and the binding subresource: node selectors,
required node affinity, taints and tolerations, and the requests a pod occupies."""

from __future__ import annotations

from typing import Any

from kueue_api.api_errors import ApiError, conflict, not_found
from kueue_api.pod_requests import pod_spec_requests

from .api import Api
from .quantities import milli, resource_list
from .store import MODIFIED

Obj = dict[str, Any]
POD_KEY = "/pods"
NODE_KEY = "/nodes"


def _amounts(values: object, field: str) -> dict[str, int]:
    return resource_list(values if isinstance(values, dict) else None)


def pod_requests(pod: Obj) -> dict[str, int]:
    """What the pod takes of a node, in milli-units, as kube-scheduler counts it
    (kueue_api.pod_requests: containers, init containers and sidecars, pod-level resources,
    overhead); every pod also takes one "pods" slot."""
    total = pod_spec_requests(pod.get("spec") or {}, _amounts)
    total["pods"] = total.get("pods", 0) + 1000
    return total


def _expression_matches(expression: Obj, labels: dict[str, str]) -> bool:
    key = expression.get("key", "")
    operator = expression.get("operator", "")
    values = [str(v) for v in expression.get("values") or []]
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            value, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return value > bound if operator == "Gt" else value < bound
    return False


def _term_matches(term: Obj, node: Obj) -> bool:
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}
    expressions = term.get("matchExpressions") or []
    field_expressions = term.get("matchFields") or []
    if not expressions and not field_expressions:
        return False
    return all(_expression_matches(e, labels) for e in expressions) and all(
        _expression_matches(e, fields) for e in field_expressions
    )


def _tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        operator = toleration.get("operator") or "Equal"
        key = toleration.get("key")
        if operator == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and (toleration.get("value") or "") == (
            taint.get("value") or ""
        ):
            return True
    return False


def node_rejection(pod: Obj, node: Obj) -> str | None:
    """Why `pod` cannot run on `node` ignoring capacity, or None when it can."""
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return "didn't match Pod's node affinity/selector"
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if terms is not None and not any(_term_matches(term, node) for term in terms):
        return "didn't match Pod's node affinity/selector"
    tolerations = spec.get("tolerations") or []
    node_spec = node.get("spec") or {}
    taints = list(node_spec.get("taints") or [])
    if node_spec.get("unschedulable"):
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    for taint in taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(
            tolerations, taint
        ):
            return (
                f"had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}".replace(
                    ": }", "}"
                )
            )
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is not None and ready.get("status") != "True":
        return "had untolerated taint {node.kubernetes.io/not-ready: }"
    return None


def node_allocatable(node: Obj) -> dict[str, int]:
    status = node.get("status") or {}
    allocatable = resource_list(status.get("allocatable") or status.get("capacity"))
    allocatable.setdefault("pods", milli(110))
    return allocatable


def bind_pod(api: Api, namespace: str, name: str, node_name: str) -> Obj:
    """The binding subresource: set spec.nodeName once and mark the pod scheduled."""
    current = api.store.get(POD_KEY, namespace, name)
    if current is None:
        raise not_found("pods", "", name)
    spec = current.get("spec") or {}
    if spec.get("nodeName"):
        raise conflict(
            "pods/binding", "", name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
        )
    if current["metadata"].get("deletionTimestamp"):
        raise conflict(
            "pods/binding", "", name, f"pod {name} is being deleted, cannot be assigned to a host"
        )
    if spec.get("schedulingGates"):
        raise ApiError(
            409, "Conflict", f"pod {name} has non-empty .spec.schedulingGates and cannot be bound"
        )
    pod = dict(current)
    pod["metadata"] = dict(current["metadata"])
    pod["spec"] = {**spec, "nodeName": node_name}
    status = dict(current.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": api.clock(),
        }
    )
    status["conditions"] = conditions
    pod["status"] = status
    api.store.commit(POD_KEY, MODIFIED, pod, current)
    return pod
