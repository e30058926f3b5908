"""Per-kind behaviour of kube-apiserver's registry strategies: defaults on create, status reset,
validation and which fields an update may change."""

from __future__ import annotations

import re
from typing import Any

from kueue_api.api_errors import invalid
from kueue_api.cel.crd_checks import crd_rule_errors
from kueue_api.jobs.jobset import with_webhook_defaults as jobset_webhook_defaults
from kueue_api.jsoncopy import json_copy

from . import dra_selectors, webhook_configs
from .resources import ResourceType

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
DEFAULT_JOB_CONTROLLER = "kubernetes.io/job-controller"


def validate_name(resource_type: ResourceType, name: str) -> Causes:
    if resource_type.kind == "Namespace":
        if len(name) > 63 or not _LABEL.match(name):
            return [
                (
                    "metadata.name",
                    f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower '
                    "case alphanumeric characters or '-', and must start and end with an "
                    "alphanumeric character",
                )
            ]
        return []
    if len(name) > 253 or not _SUBDOMAIN.match(name):
        return [
            (
                "metadata.name",
                f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower '
                "case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character",
            )
        ]
    return []


def validate_metadata(obj: Obj) -> Causes:
    causes: Causes = []
    meta = obj["metadata"]
    for key, value in (meta.get("labels") or {}).items():
        prefix, _, label_name = key.rpartition("/")
        if (
            not label_name
            or len(label_name) > 63
            or not _QUALIFIED.match(label_name)
            or (prefix and not _SUBDOMAIN.match(prefix))
        ):
            causes.append(
                (
                    "metadata.labels",
                    f'Invalid value: "{key}": name part must be a valid qualified name',
                )
            )
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append(
                (
                    "metadata.labels",
                    f'Invalid value: "{value}": a valid label must be an empty string or '
                    "consist of alphanumeric characters, '-', '_' or '.'",
                )
            )
    for key, value in (meta.get("annotations") or {}).items():
        if not isinstance(value, str):
            causes.append((f"metadata.annotations.{key}", "Invalid value: must be a string"))
    return causes


# ---- create --------------------------------------------------------------------------------


def reset_status_on_create(resource_type: ResourceType, obj: Obj) -> None:
    """Status is not writable on create through the main endpoint."""
    kind = resource_type.kind
    if kind == "Pod":
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj.get("spec") or {})}
    elif kind == "Namespace":
        obj["status"] = {"phase": "Active"}
    elif kind == "Node":
        return
    elif resource_type.has_status:
        obj.pop("status", None)
        if kind in ("Job",):
            obj["status"] = {}


def default_on_create(resource_type: ResourceType, obj: Obj) -> None:
    kind = resource_type.group, resource_type.kind
    if kind == ("", "Pod"):
        _default_pod_spec(obj.setdefault("spec", {}), top_level=True)
    elif kind == ("batch", "Job"):
        _default_job(obj)
    elif kind == ("jobset.x-k8s.io", "JobSet"):
        # JobSet's own defaulting webhook, which kubesim plays beside its JobSet controller.
        jobset_webhook_defaults(obj)
    elif kind == ("", "Namespace"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("finalizers", ["kubernetes"])
        labels = obj["metadata"].setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
    elif kind == ("", "Secret"):
        obj.setdefault("type", "Opaque")
    elif kind == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        _default_crd(obj)
    elif resource_type.key in webhook_configs.KEYS:
        webhook_configs.set_defaults(obj)


def default_on_decode(resource_type: ResourceType, obj: Obj) -> None:
    """The defaults kube-apiserver applies when it decodes a create, before admission: what a
    mutating webhook sees, and applies again to what it patched. (default_on_create then adds
    what the registry's strategy sets: the Job selector, the namespace finalizer...)"""
    kind = resource_type.group, resource_type.kind
    if kind == ("", "Pod"):
        _default_pod_spec(obj.setdefault("spec", {}), top_level=True)
    elif kind == ("batch", "Job"):
        _default_job_spec(obj.setdefault("spec", {}))
    elif kind == ("", "Namespace") and obj["metadata"].get("name"):
        labels = obj["metadata"].setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
    elif kind == ("", "Secret"):
        obj.setdefault("type", "Opaque")
    elif resource_type.key in webhook_configs.KEYS:
        webhook_configs.set_defaults(obj)


def default_on_update(resource_type: ResourceType, obj: Obj) -> None:
    """Defaults kubesim applies to an update's object (of the kinds whose decoding defaults
    matter to kubesim's own behaviour)."""
    if resource_type.key in webhook_configs.KEYS:
        webhook_configs.set_defaults(obj)
    elif (resource_type.group, resource_type.kind) == (
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
    ):
        _default_crd(obj)


def _image_pull_policy(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    if ":" not in last or last.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def _default_containers(containers: Any) -> None:
    for container in containers or []:
        if not isinstance(container, dict):
            continue
        container.setdefault("imagePullPolicy", _image_pull_policy(str(container.get("image", ""))))
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("resources", {})
        resources = container["resources"]
        if (
            isinstance(resources, dict)
            and resources.get("limits")
            and not resources.get("requests")
        ):
            resources["requests"] = dict(resources["limits"])
        elif isinstance(resources, dict) and resources.get("limits"):
            for name, value in resources["limits"].items():
                resources["requests"].setdefault(name, value)


def _default_pod_spec(spec: Obj, *, top_level: bool) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    _default_containers(spec.get("containers"))
    _default_containers(spec.get("initContainers"))
    if top_level:
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("enableServiceLinks", True)
        tolerations = spec.setdefault("tolerations", [])
        for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if not any(isinstance(t, dict) and t.get("key") == taint for t in tolerations):
                tolerations.append(
                    {
                        "key": taint,
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": 300,
                    }
                )


def _qos_class(spec: Obj) -> str:
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    requests_any = False
    guaranteed = bool(containers)
    for container in containers:
        resources = container.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        if requests or limits:
            requests_any = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if guaranteed and requests_any:
        return "Guaranteed"
    return "Burstable" if requests_any else "BestEffort"


def _default_job_spec(spec: Obj) -> None:
    """SetDefaults_Job, but for the labels it copies from the template."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 2147483647 if spec.get("backoffLimitPerIndex") else 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    template = spec.setdefault("template", {})
    if isinstance(template, dict):
        _default_pod_spec(template.setdefault("spec", {}), top_level=False)


def _default_job(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    meta = obj["metadata"]
    _default_job_spec(spec)
    template = spec.setdefault("template", {})
    template_meta = template.setdefault("metadata", {})
    if not spec.get("manualSelector"):
        uid = meta["uid"]
        spec["selector"] = {"matchLabels": {CONTROLLER_UID: uid}}
        labels = template_meta.setdefault("labels", {})
        labels[CONTROLLER_UID] = uid
        labels[JOB_NAME] = meta["name"]
        labels["controller-uid"] = uid
        labels["job-name"] = meta["name"]
    if not meta.get("labels") and template_meta.get("labels"):
        meta["labels"] = dict(template_meta["labels"])  # as batch/v1 SetDefaults_Job does


def _default_crd(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    names = spec.setdefault("names", {})
    if names.get("kind"):
        names.setdefault("singular", str(names["kind"]).lower())
        names.setdefault("listKind", f"{names['kind']}List")
    spec.setdefault("conversion", {"strategy": "None"})
    for version in spec.get("versions") or []:
        if isinstance(version, dict):
            version.setdefault("served", True)
            version.setdefault("storage", False)


# ---- validation ----------------------------------------------------------------------------


def validate(resource_type: ResourceType, obj: Obj, old: Obj | None = None) -> Causes:
    """The object's errors; `old` is the stored object on an update."""
    kind = resource_type.group, resource_type.kind
    causes = validate_metadata(obj)
    spec = obj.get("spec")
    if kind == ("", "Pod"):
        causes += _validate_pod_spec(spec, "spec")
    elif kind == ("batch", "Job"):
        causes += _validate_job(obj)
    elif kind == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        causes += _validate_crd(obj)
        # The CEL rules compile and fit the cost limits (kueue_api/cel/crd_checks.py).
        causes += crd_rule_errors(obj, old)
    elif resource_type.key in webhook_configs.KEYS:
        causes += webhook_configs.validate(obj)
    elif resource_type.group == "resource.k8s.io":
        causes += dra_selectors.selector_errors(resource_type.kind, obj)
    return causes


def _validate_pod_spec(spec: Any, path: str) -> Causes:
    if not isinstance(spec, dict):
        return [(path, "Required value")]
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return [(f"{path}.containers", "Required value")]
    causes: Causes = []
    seen: set[str] = set()
    for index, container in enumerate(containers):
        where = f"{path}.containers[{index}]"
        if not isinstance(container, dict):
            causes.append((where, "Invalid value: must be an object"))
            continue
        name = container.get("name")
        if not name:
            causes.append((f"{where}.name", "Required value"))
        elif name in seen:
            causes.append((f"{where}.name", f'Duplicate value: "{name}"'))
        else:
            seen.add(str(name))
        if not container.get("image"):
            causes.append((f"{where}.image", "Required value"))
    return causes


def _validate_job(obj: Obj) -> Causes:
    spec = obj.get("spec") or {}
    causes: Causes = []
    template_spec = (spec.get("template") or {}).get("spec")
    causes += _validate_pod_spec(template_spec, "spec.template.spec")
    if isinstance(template_spec, dict) and template_spec.get("restartPolicy") not in (
        "OnFailure",
        "Never",
    ):
        causes.append(
            (
                "spec.template.spec.restartPolicy",
                f'Unsupported value: "{template_spec.get("restartPolicy")}": supported values: '
                '"OnFailure", "Never"',
            )
        )
    for field in ("parallelism", "completions", "backoffLimit"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or value < 0):
            causes.append((f"spec.{field}", "Invalid value: must be greater than or equal to 0"))
    return causes


def _validate_crd(obj: Obj) -> Causes:
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    causes: Causes = []
    group = spec.get("group")
    plural = names.get("plural")
    if not group:
        causes.append(("spec.group", "Required value"))
    if not plural:
        causes.append(("spec.names.plural", "Required value"))
    if not names.get("kind"):
        causes.append(("spec.names.kind", "Required value"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(
            (
                "spec.scope",
                f'Unsupported value: "{spec.get("scope")}": supported values: "Cluster", '
                '"Namespaced"',
            )
        )
    if group and plural and obj["metadata"]["name"] != f"{plural}.{group}":
        causes.append(
            (
                "metadata.name",
                f'Invalid value: "{obj["metadata"]["name"]}": must be '
                'spec.names.plural+"."+spec.group',
            )
        )
    versions = spec.get("versions") or []
    if not versions or sum(1 for v in versions if isinstance(v, dict) and v.get("storage")) != 1:
        causes.append(
            (
                "spec.versions",
                "Invalid value: must have exactly one version marked as storage version",
            )
        )
    return causes


# ---- update --------------------------------------------------------------------------------

_POD_MUTABLE = (
    "activeDeadlineSeconds",
    "tolerations",
    "schedulingGates",
    "terminationGracePeriodSeconds",
)
_POD_MUTABLE_WHILE_GATED = ("nodeSelector", "affinity")


def validate_update(resource_type: ResourceType, new: Obj, old: Obj) -> Causes:
    kind = resource_type.group, resource_type.kind
    if kind == ("", "Pod"):
        return _pod_update(new, old)
    if kind == ("batch", "Job"):
        return _job_update(new, old)
    return []


def _without(spec: Obj, fields: tuple[str, ...]) -> Obj:
    trimmed = {k: v for k, v in spec.items() if k not in fields}
    trimmed["containers"] = [
        {k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c
        for c in spec.get("containers") or []
    ]
    return trimmed


def _pod_update(new: Obj, old: Obj) -> Causes:
    old_spec = old.get("spec") or {}
    new_spec = new.get("spec") or {}
    mutable: tuple[str, ...] = _POD_MUTABLE
    if old_spec.get("schedulingGates"):
        mutable = mutable + _POD_MUTABLE_WHILE_GATED
    # validateSchedulingGatesUpdate (pkg/apis/core/validation): gates only ever go.
    had = {g.get("name") for g in old_spec.get("schedulingGates") or [] if isinstance(g, dict)}
    added = [
        (
            f"spec.schedulingGates[{index}].name",
            f"Forbidden: only deletion is allowed, but found new scheduling gate "
            f"'{gate.get('name')}'",
        )
        for index, gate in enumerate(new_spec.get("schedulingGates") or [])
        if isinstance(gate, dict) and gate.get("name") not in had
    ]
    if added:
        return added
    if _without(new_spec, mutable) != _without(old_spec, mutable):
        return [
            (
                "spec",
                "Forbidden: pod updates may not change fields other than "
                "`spec.containers[*].image`,"
                "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                "(allow it to be set to 1 if it was previously negative)",
            )
        ]
    return []


def _job_update(new: Obj, old: Obj) -> Causes:
    causes: Causes = []
    old_spec = old.get("spec") or {}
    new_spec = new.get("spec") or {}
    if old_spec.get("selector") != new_spec.get("selector"):
        causes.append(("spec.selector", "Invalid value: field is immutable"))
    if old_spec.get("completionMode") != new_spec.get("completionMode"):
        causes.append(("spec.completionMode", "Invalid value: field is immutable"))
    if old_spec.get("managedBy") != new_spec.get("managedBy"):
        causes.append(("spec.managedBy", "Invalid value: field is immutable"))
    if old_spec.get("template") != new_spec.get("template"):
        never_started = not (old.get("status") or {}).get("startTime")
        if not (old_spec.get("suspend") and never_started) and not old_spec.get("suspend"):
            causes.append(("spec.template", "Invalid value: field is immutable"))
    return causes


def pod_is_terminal(obj: Obj) -> bool:
    return (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def raise_if(causes: Causes, resource_type: ResourceType, name: str) -> None:
    if causes:
        raise invalid(resource_type.kind, resource_type.group, name, causes)


def copy_object(obj: Obj) -> Obj:
    copied: Obj = json_copy(obj)
    return copied
