"""Refusals at the door, as Kueue's validating webhooks (pkg/webhooks/*_webhook.go and the job
kinds' ValidateCreate/ValidateUpdate): the webhooks' share of what `mkq validate` checks
(kueue_api.validation), answered as a 403 whose message lists every field refused. The CRDs'
own rules are not repeated: the API server evaluates them before it calls a webhook.

The CRD's OpenAPI schema has checked the object's shape before a webhook sees it, so an object
our models cannot read (a field of a newer Kueue, say) is let through: only the rules refuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from kueue_api.api_resources import KUEUE_GROUP
from kueue_api.errors import FieldError
from kueue_api.jobs import JobKind, JobKinds, pod_parent_of
from kueue_api.jobs.base import PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL
from kueue_api.jobs.pod_parent import UpdateContext
from kueue_api.loader import model_for
from kueue_api.validation import validate_object, validate_update
from kueue_api.webhooks.mutation import ClusterView, Defaulting, is_managed_object
from kueue_api.webhooks.review import Answer, Request, allow, deny

JsonObject = dict[str, Any]


def _message(errors: Sequence[FieldError | str]) -> str:
    texts = [str(e) for e in errors]
    # utilerrors.Aggregate's form: one error plain, several in brackets.
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def _model(obj: JsonObject) -> Any:
    model = model_for(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
    if model is None:
        return None
    try:
        return model.model_validate(obj)
    except ValidationError:
        return None


def _kueue_object(request: Request) -> Answer:
    if request.obj is None or request.sub_resource:
        return allow()
    new = _model(request.obj)
    if new is None:
        return allow()
    errors = [e for e in validate_object(new) if not e.warning]
    if request.operation == "UPDATE" and request.old_obj is not None:
        old = _model(request.old_obj)
        if old is not None:
            errors += [e for e in validate_update(old, new) if not e.warning]
    return deny(_message(errors)) if errors else allow()


def _label(obj: JsonObject | None, name: str) -> str | None:
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    value = labels.get(name)
    return str(value) if value is not None else None


def _suspended(obj: JsonObject | None, kinds: JobKinds[JobKind]) -> bool:
    kind = kinds.of(obj or {})
    return kind is not None and kind.is_suspended(obj or {})


def _job(request: Request, kinds: JobKinds[JobKind]) -> Answer:
    """A job kind's own rules (JobKind.admission_problems) on create and update."""
    new = request.obj or {}
    kind = kinds.of(new)
    errors: list[FieldError | str] = []
    if kind is not None:
        errors += kind.admission_problems(new, request.old_obj)
    if request.operation == "UPDATE":
        errors += _job_update_problems(request, kinds)
    return deny(_message(errors)) if errors else allow()


def _job_update_problems(request: Request, kinds: JobKinds[JobKind]) -> list[str]:
    """Kueue's ValidateUpdateForQueueName and the prebuilt Workload's immutability: a running
    job keeps its queue, and no job changes the Workload it was built for."""
    old, new = request.old_obj, request.obj
    errors: list[str] = []
    old_queue, new_queue = _label(old, QUEUE_NAME_LABEL), _label(new, QUEUE_NAME_LABEL)
    if old_queue != new_queue and not _suspended(old, kinds):
        errors.append(
            f"metadata.labels[{QUEUE_NAME_LABEL}]: Invalid value: {new_queue!r}: "
            "field is immutable while the job runs (suspend it first)"
        )
    old_prebuilt, new_prebuilt = (
        _label(old, PREBUILT_WORKLOAD_LABEL),
        _label(new, PREBUILT_WORKLOAD_LABEL),
    )
    if old_prebuilt != new_prebuilt:
        errors.append(
            f"metadata.labels[{PREBUILT_WORKLOAD_LABEL}]: Invalid value: {new_prebuilt!r}: "
            "field is immutable"
        )
    return errors


def _pod_parent(request: Request, view: ClusterView | None, settings: Defaulting) -> Answer:
    """A Deployment's or StatefulSet's rules (PodParentKind.create_problems and
    update_problems), given whether Kueue manages it and its Workload."""
    new = {
        **(request.obj or {}),
        "metadata": {**((request.obj or {}).get("metadata") or {}), "namespace": request.namespace},
    }
    kind = pod_parent_of(new)
    if kind is None:
        return allow()
    if request.operation == "CREATE" or request.old_obj is None:
        problems = kind.create_problems(new)
    else:
        workload_name = kind.parent_workload_name(request.old_obj)
        workload = None
        if view is not None and workload_name is not None:
            workload = view.workload(request.namespace, workload_name)
        managed = (
            is_managed_object(new, view, settings)
            if view is not None
            else bool(((new.get("metadata") or {}).get("labels") or {}).get(QUEUE_NAME_LABEL))
        )
        problems = kind.update_problems(request.old_obj, new, UpdateContext(managed, workload))
    return deny(_message(problems)) if problems else allow()


def validate(
    request: Request,
    frameworks: frozenset[str],
    view: ClusterView | None = None,
    settings: Defaulting | None = None,
) -> Answer:
    """The validating webhook's answer; `view` and `settings` (the cluster, and Kueue's
    Configuration) let a StatefulSet's update be checked against its Workload."""
    group, kind = request.group_kind
    if group == KUEUE_GROUP and request.operation in ("CREATE", "UPDATE"):
        return _kueue_object(request)
    settings = settings or Defaulting(frameworks=frameworks)
    framework = settings.framework_of((group, kind))
    creating_or_updating = request.operation in ("CREATE", "UPDATE")
    if framework in frameworks and framework != "pod" and creating_or_updating:
        if request.sub_resource:
            return allow()
        if pod_parent_of(request.obj or {}) is not None:
            return _pod_parent(request, view, settings)
        return _job(request, settings.kinds)
    return allow()
