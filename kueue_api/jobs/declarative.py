"""A job kind declared in the Configuration rather than written as code (an mkq extension).

Kueue needs Go code for each kind: a GenericJob (pkg/controller/jobframework/interface.go) that
says where the kind keeps its pod templates and counts, how it is suspended and when it is
finished. For a custom resource that keeps those in plain fields, the answers are paths, so an
entry of `integrations.declarativeKinds` (kueue_api.models.config.DeclarativeKindSpec) is
enough:

- podSets: one per declared podSet, in order, its template at `templatePath` (only its labels
  and annotations kept of the metadata), `count` pods from `countPath` (else the fixed
  `count`), `minCount` from `minCountPath` when lower (partial admission);
- suspend and resume: the boolean at `suspendPath`; running a job merges admission's node
  selector, tolerations, labels and annotations into each template and writes an admitted
  count that differs back at `countPath`;
- managedBy: at `managedByPath` when the kind has one, else none (a worker copy has nothing to
  clear, and the manager keeps its own copy suspended);
- finished: one of the `conditions.succeeded` or `conditions.failed` types true in
  `status.conditions`; running (started, active, pods ready): `conditions.running` true
  (without one, a resumed job counts as started and ready, and never as active).

The entry's paths are checked when the Configuration loads (kueue_api.validation); a job whose
path holds no pod template is refused by `check`, naming the path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kueue_api.api_resources import ResourceType
from kueue_api.errors import FieldError
from kueue_api.jobs import checks
from kueue_api.jobs.base import (
    Finish,
    JsonObject,
    PodSetInfo,
    QueueLabelledJob,
    field_at,
    merge_into_template,
    restore_template,
    set_field,
    true_condition,
)
from kueue_api.jsoncopy import json_copy
from kueue_api.models.config import DeclarativeKindSpec, DeclarativePodSet
from kueue_api.pod_sets import topology_request
from kueue_api.validation import DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN


def path_of(text: str) -> tuple[str, ...]:
    """A dotted field path (`spec.template`) as its keys."""
    return tuple(text.split("."))


class DeclarativeKind(QueueLabelledJob):
    """The JobKind an `integrations.declarativeKinds` entry describes."""

    def __init__(self, spec: DeclarativeKindSpec) -> None:
        self.spec = spec
        self.resource = ResourceType(spec.group, spec.version, spec.plural, spec.kind, True)
        self.framework = f"{spec.group}/{spec.kind.lower()}"
        self.pod_owner_label = spec.pod_owner_label or f"{spec.group}/{spec.kind.lower()}-name"
        self.suspend_path = path_of(spec.suspend_path)
        self.has_managed_by = spec.managed_by_path is not None
        self.managed_by_path = path_of(spec.managed_by_path or "spec.managedBy")
        self.pod_priority_class_field = (
            f"{spec.pod_sets[0].template_path}.spec.priorityClassName" if spec.pod_sets else ""
        )

    def _count(self, job: JsonObject, pod_set: DeclarativePodSet) -> int:
        if pod_set.count_path is None:
            return pod_set.count
        found = field_at(job, path_of(pod_set.count_path))
        return pod_set.count if found is None else int(found)

    def check(self, job: JsonObject) -> None:
        checks.require_mapping(job.get("spec"), "spec")
        for pod_set in self.spec.pod_sets:
            path = pod_set.template_path
            checks.pod_template(field_at(job, path_of(path)), path)
            count = pod_set.count
            if pod_set.count_path is not None:
                found = field_at(job, path_of(pod_set.count_path))
                if found is not None:
                    count = checks.int32(found, pod_set.count_path)
            if pod_set.min_count_path is not None:
                found = field_at(job, path_of(pod_set.min_count_path))
                if found is not None and checks.int32(found, pod_set.min_count_path) > count:
                    raise checks.ManifestError(
                        pod_set.min_count_path, f"must be at most the count ({count})"
                    )

    def admission_problems(self, job: JsonObject, old: JsonObject | None) -> list[FieldError]:
        """What `check` refuses, at the webhook: a job whose declared paths hold no pod
        template or count never reaches the reconciler."""
        try:
            self.check(job)
        except checks.ManifestError as error:
            return [FieldError(error.field, error.message)]
        return []

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        pod_sets = []
        for declared in self.spec.pod_sets:
            template = json_copy(field_at(job, path_of(declared.template_path)) or {})
            metadata = template.get("metadata") or {}
            template["metadata"] = {
                k: dict(v) for k, v in metadata.items() if k in ("labels", "annotations") and v
            }
            count = self._count(job, declared)
            pod_set: JsonObject = {"name": declared.name, "count": count, "template": template}
            if declared.min_count_path is not None:
                least = field_at(job, path_of(declared.min_count_path))
                if least is not None and int(least) < count:
                    pod_set["minCount"] = int(least)
            request = topology_request(template, None)
            if request is not None:
                pod_set["topologyRequest"] = request
            pod_sets.append(pod_set)
        return pod_sets

    def managed_by(self, job: JsonObject) -> str | None:
        return super().managed_by(job) if self.has_managed_by else None

    def with_managed_by(self, job: JsonObject, controller: str) -> JsonObject:
        """A kind without a managedBy field has nowhere to name MultiKueue: unchanged."""
        return super().with_managed_by(job, controller) if self.has_managed_by else json_copy(job)

    def worker_copy(
        self, job: JsonObject, *, workload_name: str, origin: str, origin_uid: str = ""
    ) -> JsonObject:
        copy = super().worker_copy(
            job, workload_name=workload_name, origin=origin, origin_uid=origin_uid
        )
        if not self.has_managed_by:
            # The base class cleared `spec.managedBy`, a field this kind may have for itself.
            owner = field_at(job, self.managed_by_path[:-1])
            value = owner.get(self.managed_by_path[-1]) if isinstance(owner, dict) else None
            if value is not None:
                set_field(copy, self.managed_by_path, json_copy(value))
        return copy

    def _running(self, job: JsonObject) -> bool:
        running = self.spec.conditions.running
        return running is not None and true_condition(job, running) is not None

    def is_active(self, job: JsonObject) -> bool:
        return self._running(job) and self.finished(job) is None

    def has_started(self, job: JsonObject) -> bool:
        """Running, or finished; without a running condition, once resumed."""
        if self.finished(job) is not None:
            return True
        return self.pods_ready(job)

    def pods_ready(self, job: JsonObject) -> bool:
        if self.spec.conditions.running is None:
            return not self.is_suspended(job)
        return self._running(job)

    def finished(self, job: JsonObject) -> Finish | None:
        conditions = self.spec.conditions
        found = true_condition(job, *conditions.succeeded, *conditions.failed)
        if found is None:
            return None
        return Finish(found["type"] in conditions.succeeded, str(found.get("message", "")))

    def run(self, job: JsonObject, infos: Sequence[PodSetInfo]) -> JsonObject:
        result = self.resumed(job)
        declared = self.spec.pod_sets
        if len(infos) != len(declared):
            raise ValueError(
                f"a {self.resource.kind} has {len(declared)} podSets, admission {len(infos)}"
            )
        for pod_set, info in zip(declared, infos, strict=True):
            path = path_of(pod_set.template_path)
            set_field(result, path, merge_into_template(field_at(result, path) or {}, info))
            if pod_set.count_path is not None and info.count != self._count(result, pod_set):
                set_field(result, path_of(pod_set.count_path), info.count)
        return result

    def restore(self, job: JsonObject, original_pod_sets: Sequence[JsonObject]) -> JsonObject:
        result = json_copy(job)
        declared = self.spec.pod_sets
        if len(original_pod_sets) != len(declared):
            return result  # Kueue skips a restore that does not match, too
        for pod_set, original in zip(declared, original_pod_sets, strict=True):
            path = path_of(pod_set.template_path)
            current = field_at(result, path) or {}
            restored = restore_template(current, original.get("template") or {})
            set_field(result, path, restored)
            count = original.get("count")
            if count is not None and pod_set.count_path is not None:
                if int(count) == self._count(result, pod_set):
                    continue
                set_field(result, path_of(pod_set.count_path), int(count))
        return result


_PATH_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_KIND_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")


def _path_problem(value: str) -> str | None:
    segments = value.split(".")
    if not all(_PATH_SEGMENT.fullmatch(segment) for segment in segments):
        return "must be a dotted path of field names (spec.template)"
    if segments[0] != "spec" or len(segments) < 2:
        return "must be a field under spec (spec.template)"
    return None


def spec_problems(spec: DeclarativeKindSpec, at: str) -> list[FieldError]:
    """What is wrong with one `integrations.declarativeKinds` entry at `at`, by field: names
    Kubernetes would refuse, paths that are not fields under `spec`, podSets without a name
    or a template, or sharing one, and a kind that finishes on nothing."""
    errors: list[FieldError] = []

    def invalid(field: str, value: object, detail: str) -> None:
        errors.append(FieldError(f"{at}.{field}", f"Invalid value: {value!r}: {detail}"))

    if len(spec.group) > 253 or not re.fullmatch(DNS_SUBDOMAIN_PATTERN, spec.group):
        invalid("group", spec.group, "must be an API group (a DNS subdomain: example.com)")
    if not re.fullmatch(DNS_LABEL_PATTERN, spec.version):
        invalid("version", spec.version, "must be an API version (a DNS label: v1)")
    if not _KIND_NAME.fullmatch(spec.kind):
        invalid("kind", spec.kind, "must be a kind name (CamelCase: Trainer)")
    if not re.fullmatch(DNS_LABEL_PATTERN, spec.plural):
        invalid("plural", spec.plural, "must be the resource's plural (lower case: trainers)")
    paths = {"suspendPath": spec.suspend_path, "managedByPath": spec.managed_by_path}
    for index, pod_set in enumerate(spec.pod_sets):
        field = f"podSets[{index}]"
        paths[f"{field}.templatePath"] = pod_set.template_path
        paths[f"{field}.countPath"] = pod_set.count_path
        paths[f"{field}.minCountPath"] = pod_set.min_count_path
        if not re.fullmatch(DNS_LABEL_PATTERN, pod_set.name):
            invalid(f"{field}.name", pod_set.name, "must be a DNS label (main)")
        if pod_set.name in (p.name for p in spec.pod_sets[:index]):
            errors.append(FieldError(f"{at}.{field}.name", f"Duplicate value: {pod_set.name!r}"))
    if not spec.pod_sets:
        errors.append(FieldError(f"{at}.podSets", "Required value: at least one podSet"))
    seen: dict[str, str] = {}
    for field, value in paths.items():
        if value is None:
            continue
        problem = _path_problem(value)
        if problem is not None:
            invalid(field, value, problem)
        elif value in seen:
            invalid(field, value, f"is {seen[value]} already")
        seen.setdefault(value, field)
    if not spec.conditions.succeeded:
        errors.append(
            FieldError(f"{at}.conditions.succeeded", "Required value: at least one condition type")
        )
    return errors
