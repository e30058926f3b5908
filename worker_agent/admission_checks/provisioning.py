"""`kueue.x-k8s.io/provisioning-request`: Kueue's ProvisioningRequest admission check.

A reservation on a ClusterQueue with this check asks a cluster autoscaler for its pods' nodes
before it may start: for each check it writes a ProvisioningRequest (`autoscaling.x-k8s.io/v1`,
cluster-autoscaler's API) with one PodTemplate per podSet, and follows the request's
conditions (Kueue's pkg/controller/admissionchecks/provisioning/controller.go):

- Provisioned: the check is Ready, and the pods carry the request's name and class
  (`autoscaling.x-k8s.io/consume-provisioning-request`, `.../provisioning-class-name`) and the
  nodeSelector the config's `podSetUpdates` take from `provisioningClassDetails`;
- Accepted with a Provisioned=False message (an ETA): Pending with that message;
- Failed, or BookingExpired before the Workload was admitted: the check is Retry with the
  config's backoff (`retryStrategy`), the Workload goes back to the queue, and the next
  reservation writes attempt n+1 (`<workload>-<check>-<n>`); past `backoffLimitCount` retries
  it is Rejected with the autoscaler's message and the Workload is deactivated;
- CapacityRevoked while the Workload is active: Rejected (its nodes are gone);
- no podSet uses the config's `managedResources`: Ready, "the provisioning request is not
  needed", nothing is written.

Requests of other attempts, or written under another class or parameters, are deleted; once
the Workload is finished or evicted all of them are (Kueue's
CleanupProvisioningRequestsOnEviction, on by default). The check is Active while its
`spec.parameters` name a ProvisioningRequestConfig that exists (Kueue's
admissioncheck_reconciler.go); until then Workloads wait with "the check is not active".

Everything here is decided from the cached objects: the runner writes the requests and states.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_api.api_resources import KUEUE_GROUP
from kueue_api.conditions import condition_true, find_condition
from kueue_api.jobs.base import merge_into_template
from kueue_api.jsoncopy import json_copy
from worker_agent import workloads as wl
from worker_agent.admission_checks import states
from worker_agent.admission_checks.base import (
    Activity,
    AdmissionCheckController,
    CheckAction,
    CheckDecision,
    ClusterFacts,
    CreateObject,
    DeleteObject,
)
from worker_agent.backoff import Backoff
from worker_agent.cache import object_key
from worker_agent.resources import (
    POD_TEMPLATES,
    PROVISIONING_REQUEST_CONFIGS,
    PROVISIONING_REQUESTS,
    RESOURCE_FLAVORS,
    ResourceType,
)

JsonObject = dict[str, Any]

CONTROLLER_NAME = "kueue.x-k8s.io/provisioning-request"
CONFIG_KIND = "ProvisioningRequestConfig"
CHECK_INACTIVE_MESSAGE = "the check is not active"
NO_REQUEST_NEEDED = "the provisioning request is not needed"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
CONSUME_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"

ACCEPTED = "Accepted"
PROVISIONED = "Provisioned"
FAILED = "Failed"
BOOKING_EXPIRED = "BookingExpired"
CAPACITY_REVOKED = "CapacityRevoked"

_NAME_LIMIT = 253
_HASH_LENGTH = 5
_TEMPLATE_PREFIX = "ppt"


# --- names (Kueue's provisioning.go) -------------------------------------------------------


def limit_name(full: str) -> str:
    """A name cut to fit an object name, with a short hash of the whole so cuts stay unique."""
    keep = _NAME_LIMIT - 1 - _HASH_LENGTH
    if len(full) <= keep:
        return full
    digest = hashlib.sha1(full.encode()).hexdigest()[:_HASH_LENGTH]
    return f"{full[:keep]}-{digest}"


def request_name(workload_name: str, check_name: str, attempt: int) -> str:
    return limit_name(f"{workload_name}-{check_name}-{attempt}")


def template_name(request: str, pod_set: str) -> str:
    return limit_name(f"{_TEMPLATE_PREFIX}-{request}-{pod_set}")


def attempt_of(name: str, workload_name: str, check_name: str) -> int | None:
    """The attempt number a request's name carries for this Workload and check, if any."""
    prefix = re.escape(limit_name(f"{workload_name}-{check_name}-"))
    found = re.fullmatch(f"{prefix}([0-9]+)", name)
    return int(found.group(1)) if found else None


# --- the config ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryStrategy:
    limit: int = 3
    base_seconds: int = 60
    max_seconds: int = 1800

    def requeue_after(self, retry_count: int) -> int:
        """Kueue's UpdateAdmissionCheckRequeueState: base * 2^retries, capped, in seconds."""
        cap = self.max_seconds or 2**62
        return int(Backoff(base=self.base_seconds, cap=cap, jitter=0).delay(retry_count))


@dataclass(frozen=True)
class Config:
    """A ProvisioningRequestConfig's spec, with Kueue's defaults filled in."""

    class_name: str
    parameters: Mapping[str, str]
    managed_resources: frozenset[str]
    retry: RetryStrategy
    node_selector_details: tuple[tuple[str, str], ...]
    merge_policy: str | None

    @classmethod
    def from_object(cls, obj: JsonObject) -> Config:
        spec = obj.get("spec") or {}
        retry = spec.get("retryStrategy") or {}
        defaults = RetryStrategy()
        updates = (spec.get("podSetUpdates") or {}).get("nodeSelector") or []
        return cls(
            class_name=str(spec.get("provisioningClassName") or ""),
            parameters={str(k): str(v) for k, v in (spec.get("parameters") or {}).items()},
            managed_resources=frozenset(str(r) for r in spec.get("managedResources") or ()),
            retry=RetryStrategy(
                int(retry.get("backoffLimitCount", defaults.limit)),
                int(retry.get("backoffBaseSeconds", defaults.base_seconds)),
                int(retry.get("backoffMaxSeconds", defaults.max_seconds)),
            ),
            node_selector_details=tuple(
                (str(u.get("key")), str(u.get("valueFromProvisioningClassDetail"))) for u in updates
            ),
            merge_policy=spec.get("podSetMergePolicy"),
        )


def config_reference_error(check: JsonObject) -> str | None:
    """Why an AdmissionCheck's parameters cannot name a ProvisioningRequestConfig (Kueue's
    refValidForGK wording), or None."""
    ref = (check.get("spec") or {}).get("parameters")
    if not ref:
        return "missing parameters reference"
    if not ref.get("name"):
        return "empty name: bad parameters reference"
    if ref.get("apiGroup") != KUEUE_GROUP:
        return (
            f'wrong group "{ref.get("apiGroup") or ""}", expecting "{KUEUE_GROUP}": '
            "bad parameters reference"
        )
    if ref.get("kind") != CONFIG_KIND:
        return (
            f'wrong kind "{ref.get("kind") or ""}", expecting "{CONFIG_KIND}": '
            "bad parameters reference"
        )
    return None


def config_object(check: JsonObject, facts: ClusterFacts) -> tuple[JsonObject | None, str]:
    """The ProvisioningRequestConfig `check` names, or None and why not."""
    error = config_reference_error(check)
    if error is not None:
        return None, error
    name = str(((check.get("spec") or {}).get("parameters") or {}).get("name"))
    found = facts.get(PROVISIONING_REQUEST_CONFIGS, name)
    if found is None:
        return None, f'{PROVISIONING_REQUEST_CONFIGS} "{name}" not found'
    return found, ""


# --- what the Workload asks for ------------------------------------------------------------


def _uses(pod_spec: JsonObject, resources: frozenset[str]) -> bool:
    for container in [*(pod_spec.get("initContainers") or ()), *(pod_spec.get("containers") or ())]:
        amounts = container.get("resources") or {}
        if any(r in resources for kind in ("requests", "limits") for r in amounts.get(kind) or {}):
            return True
    return False


def _assignments(workload: JsonObject) -> dict[str, JsonObject]:
    admission = (workload.get("status") or {}).get("admission") or {}
    return {str(a.get("name")): a for a in admission.get("podSetAssignments") or []}


def _pod_sets(workload: JsonObject) -> list[JsonObject]:
    return list((workload.get("spec") or {}).get("podSets") or [])


def _count(pod_set: JsonObject, assignment: JsonObject) -> int:
    count = assignment.get("count")
    return int(pod_set.get("count") or 0) if count is None else int(count)


def _concerned(pod_set: JsonObject, config: Config) -> bool:
    """A podSet the request is for: it has pods and, with managedResources, uses one."""
    if int(pod_set.get("count") or 0) <= 0:
        return False
    spec = (pod_set.get("template") or {}).get("spec") or {}
    return not config.managed_resources or _uses(spec, config.managed_resources)


def request_needed(workload: JsonObject, config: Config) -> bool:
    """Whether some podSet of the reservation needs the autoscaler (reqIsNeeded)."""
    assignments = _assignments(workload)
    for pod_set in _pod_sets(workload):
        if not _concerned(pod_set, config):
            continue
        assignment = assignments.get(str(pod_set.get("name")))
        if assignment is None:
            raise ValueError(f"missing assignment for PodSet {pod_set.get('name')!r}")
        if _count(pod_set, assignment) > 0:
            return True
    return False


@dataclass(frozen=True)
class MergedPodSet:
    """One entry of the request: the first podSet of a group and the pods of all of it."""

    name: str
    pod_set: JsonObject
    assignment: JsonObject
    count: int


def _requests_of(containers: Iterable[JsonObject]) -> list[Any]:
    return [(c.get("resources") or {}).get("requests") or {} for c in containers]


def _similar(a: JsonObject, b: JsonObject) -> bool:
    """IdenticalWorkloadSchedulingRequirements: the same requests and placement constraints."""
    sa = (a.get("template") or {}).get("spec") or {}
    sb = (b.get("template") or {}).get("spec") or {}
    for field in ("containers", "initContainers"):
        if len(sa.get(field) or ()) != len(sb.get(field) or ()):
            return False
        if _requests_of(sa.get(field) or ()) != _requests_of(sb.get(field) or ()):
            return False
    keys = ("resources", "nodeSelector", "tolerations", "affinity", "resourceClaims")
    return all(sa.get(k) == sb.get(k) for k in keys)


def _mergeable(a: JsonObject, b: JsonObject, policy: str | None) -> bool:
    if policy == "IdenticalPodTemplates":
        return a.get("template") == b.get("template")
    if policy == "IdenticalWorkloadSchedulingRequirements":
        return _similar(a, b)
    return False


def merged_pod_sets(workload: JsonObject, config: Config) -> list[MergedPodSet]:
    """The request's podSets: those concerned, in order, merged by the config's policy."""
    assignments = _assignments(workload)
    merged: list[MergedPodSet] = []
    for pod_set in _pod_sets(workload):
        if not _concerned(pod_set, config):
            continue
        name = str(pod_set.get("name"))
        assignment = assignments.get(name)
        if assignment is None:
            raise ValueError(f"missing assignment for PodSet {name!r}")
        count = _count(pod_set, assignment)
        if count <= 0:
            continue
        for i, group in enumerate(merged):
            if _mergeable(group.pod_set, pod_set, config.merge_policy):
                merged[i] = MergedPodSet(
                    group.name, group.pod_set, group.assignment, group.count + count
                )
                break
        else:
            merged.append(MergedPodSet(name, pod_set, assignment, count))
    return merged


def _limits_as_requests(pod_spec: JsonObject) -> None:
    """A limit stands in for a missing request (Kueue's UseLimitsAsMissingRequestsInPod)."""
    for field in ("initContainers", "containers"):
        for container in pod_spec.get(field) or ():
            resources = container.get("resources") or {}
            limits = resources.get("limits") or {}
            if limits:
                resources["requests"] = {**limits, **(resources.get("requests") or {})}
                container["resources"] = resources


def _placement_only(workload: JsonObject) -> JsonObject:
    """The Workload without check podSetUpdates: a request's pods get the flavors' placement
    (Kueue's podset.FromAssignment), not what other checks will add."""
    status = {k: v for k, v in (workload.get("status") or {}).items() if k != "admissionChecks"}
    return {**workload, "status": status}


def build_request(
    workload: JsonObject,
    check_name: str,
    config: Config,
    attempt: int,
    flavors: Mapping[str, JsonObject],
) -> tuple[list[JsonObject], JsonObject]:
    """The PodTemplates and the ProvisioningRequest of one attempt (owned by the Workload;
    the templates pass to the request once it exists)."""
    meta = workload.get("metadata") or {}
    namespace = meta.get("namespace")
    name = request_name(str(meta.get("name")), check_name, attempt)
    infos = {i.name: i for i in wl.pod_set_infos(_placement_only(workload), flavors) or []}
    owner = wl.owner_reference(workload, controller=True)
    templates: list[JsonObject] = []
    pod_sets: list[JsonObject] = []
    for group in merged_pod_sets(workload, config):
        pt_name = template_name(name, group.name)
        template = json_copy(group.pod_set.get("template") or {})
        info = infos.get(group.name)
        if info is not None:
            template = merge_into_template(template, info)
        _limits_as_requests(template.setdefault("spec", {}))
        templates.append(
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {
                    "name": pt_name,
                    "namespace": namespace,
                    "labels": {MANAGED_LABEL: "true"},
                    "ownerReferences": [dict(owner)],
                },
                "template": template,
            }
        )
        pod_sets.append({"podTemplateRef": {"name": pt_name}, "count": group.count})
    parameters = dict(config.parameters)
    for key, value in ((meta.get("annotations")) or {}).items():
        if key.startswith(wl.PROVREQ_ANNOTATION_PREFIX):
            parameters[key[len(wl.PROVREQ_ANNOTATION_PREFIX) :]] = str(value)
    spec: JsonObject = {"provisioningClassName": config.class_name, "podSets": pod_sets}
    if parameters:
        spec["parameters"] = parameters
    request = {
        "apiVersion": PROVISIONING_REQUESTS.api_version,
        "kind": PROVISIONING_REQUESTS.kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {MANAGED_LABEL: "true"},
            "ownerReferences": [dict(owner)],
        },
        "spec": spec,
    }
    return templates, request


# --- what the autoscaler said --------------------------------------------------------------


def _message(request: JsonObject, kind: str) -> str:
    return str((find_condition(request, kind) or {}).get("message") or "")


def _synced(request: JsonObject, config: Config) -> bool:
    """Written under the config as it is now (provReqSyncedWithConfig)."""
    spec = request.get("spec") or {}
    if spec.get("provisioningClassName") != config.class_name:
        return False
    written = spec.get("parameters") or {}
    return all(written.get(k) == v for k, v in config.parameters.items())


def owned_requests(workload: JsonObject, facts: ClusterFacts) -> list[JsonObject]:
    """The ProvisioningRequests this Workload controls."""
    meta = workload.get("metadata") or {}
    uid, namespace = meta.get("uid"), meta.get("namespace")
    return [
        r
        for r in facts.objects(PROVISIONING_REQUESTS)
        if (r.get("metadata") or {}).get("namespace") == namespace
        and any(
            ref.get("uid") == uid and ref.get("controller")
            for ref in (r.get("metadata") or {}).get("ownerReferences") or ()
        )
    ]


def latest_request(
    workload: JsonObject, check_name: str, config: Config, owned: Sequence[JsonObject]
) -> tuple[JsonObject, int] | None:
    """The request of the highest attempt for this check that matches the config."""
    name = str((workload.get("metadata") or {}).get("name"))
    best: tuple[JsonObject, int] | None = None
    for request in owned:
        attempt = attempt_of(str((request.get("metadata") or {}).get("name")), name, check_name)
        if attempt is None or not _synced(request, config):
            continue
        if best is None or attempt > best[1]:
            best = (request, attempt)
    return best


def pod_set_updates(
    workload: JsonObject, request: JsonObject, config: Config
) -> tuple[JsonObject, ...]:
    """What a provisioned request adds to its podSets' pods (Kueue's podSetUpdates)."""
    meta = request.get("metadata") or {}
    name = str(meta.get("name"))
    by_template = {
        template_name(name, str(p.get("name"))): str(p.get("name")) for p in _pod_sets(workload)
    }
    details = (request.get("status") or {}).get("provisioningClassDetails") or {}
    class_name = str((request.get("spec") or {}).get("provisioningClassName") or "")
    updates = []
    for entry in (request.get("spec") or {}).get("podSets") or ():
        update: JsonObject = {
            "name": by_template.get(str((entry.get("podTemplateRef") or {}).get("name")), ""),
            "annotations": {CONSUME_ANNOTATION: name, CLASS_ANNOTATION: class_name},
        }
        selector = {
            key: str(details[detail])
            for key, detail in config.node_selector_details
            if detail in details
        }
        if selector:
            update["nodeSelector"] = selector
        updates.append(update)
    return tuple(updates)


@dataclass(frozen=True)
class _Outcome:
    """The check's next state (None: as it is), its message (None: as it is)."""

    state: str | None = None
    message: str | None = None
    requeue_after: int | None = None
    updates: tuple[JsonObject, ...] | None = None


def _retrying(attempt: int, retry_count: int, config: Config, message: str, final: str) -> _Outcome:
    if attempt > config.retry.limit:
        return _Outcome(states.REJECTED, final)
    if attempt > retry_count:  # an attempt not retried yet (never retry an old request)
        return _Outcome(states.RETRY, message, config.retry.requeue_after(retry_count))
    return _Outcome(message=message)


def outcome(
    workload: JsonObject, check_state: JsonObject, request: JsonObject, attempt: int, config: Config
) -> _Outcome:
    """The check state the request's conditions call for (Kueue's syncCheckStates)."""
    retry_count = int(check_state.get("retryCount") or 0)
    if condition_true(request, FAILED):
        failed = _message(request, FAILED)
        return _retrying(attempt, retry_count, config, f"Retrying after failure: {failed}", failed)
    if condition_true(request, CAPACITY_REVOKED):
        if (workload.get("spec") or {}).get("active", True) and not wl.is_finished(workload):
            return _Outcome(states.REJECTED, _message(request, CAPACITY_REVOKED))
        return _Outcome()
    if condition_true(request, BOOKING_EXPIRED):
        if wl.is_admitted(workload):
            return _Outcome()
        expired = _message(request, BOOKING_EXPIRED)
        return _retrying(
            attempt, retry_count, config, f"Retrying after booking expired: {expired}", expired
        )
    if condition_true(request, PROVISIONED):
        if check_state.get("state") == states.READY:
            return _Outcome()
        return _Outcome(
            states.READY,
            _message(request, PROVISIONED),
            updates=pod_set_updates(workload, request, config),
        )
    if condition_true(request, ACCEPTED):
        provisioned = find_condition(request, PROVISIONED)
        if provisioned is not None:
            return _Outcome(states.PENDING, str(provisioned.get("message") or ""))
        return _Outcome()
    return _Outcome(states.PENDING, "")


def _needs_new_attempt(request: JsonObject, workload: JsonObject) -> bool:
    return condition_true(request, FAILED) or (
        condition_true(request, BOOKING_EXPIRED) and not wl.is_admitted(workload)
    )


# --- the controller ------------------------------------------------------------------------


class ProvisioningRequestCheck(AdmissionCheckController):
    """The `kueue.x-k8s.io/provisioning-request` check controller."""

    controller_name = CONTROLLER_NAME
    watches: tuple[ResourceType, ...] = (PROVISIONING_REQUESTS, PROVISIONING_REQUEST_CONFIGS)
    writes: tuple[ResourceType, ...] = (PROVISIONING_REQUESTS, POD_TEMPLATES)
    activity_watches: tuple[ResourceType, ...] = (PROVISIONING_REQUEST_CONFIGS,)
    revisited_states = frozenset({states.READY})

    def activity(self, check: JsonObject, facts: ClusterFacts) -> Activity:
        found, why = config_object(check, facts)
        if found is None:
            return Activity(False, "BadParametersRef", why)
        return Activity(True)

    def decide(self, workload: JsonObject, check: JsonObject, facts: ClusterFacts) -> CheckDecision:
        name = str((check.get("metadata") or {}).get("name"))
        current = states.find_check(workload, name) or {"name": name, "state": states.PENDING}
        state, message = str(current.get("state")), str(current.get("message") or "")
        owned = owned_requests(workload, facts)
        found, _ = config_object(check, facts)
        if found is None:
            return CheckDecision(states.PENDING, CHECK_INACTIVE_MESSAGE)
        config = Config.from_object(found)
        try:
            needed = request_needed(workload, config)
        except ValueError as error:
            return CheckDecision(state, f"inconsistent podSet assignments: {error}")
        workload_name = str((workload.get("metadata") or {}).get("name"))
        checks = [str(c.get("name")) for c in states.check_states(workload)]

        def check_of(request: JsonObject) -> str | None:
            request_name = str((request.get("metadata") or {}).get("name"))
            return next(
                (c for c in checks if attempt_of(request_name, workload_name, c) is not None), None
            )

        mine = [r for r in owned if check_of(r) == name]
        latest = latest_request(workload, name, config, mine) if needed else None
        keep = {object_key(latest[0])} if latest else set()
        # Its own stale attempts, and requests of the Workload no check accounts for.
        actions: list[CheckAction] = [
            DeleteObject(PROVISIONING_REQUESTS, object_key(r))
            for r in owned
            if object_key(r) not in keep and check_of(r) in (name, None)
        ]
        if not needed:
            if state == states.READY:
                return CheckDecision(state, message, _updates(current), actions=tuple(actions))
            return CheckDecision(states.READY, NO_REQUEST_NEEDED, actions=tuple(actions))
        result = _Outcome() if latest is None else outcome(workload, current, *latest, config)
        next_state = result.state or state
        next_message = message if result.message is None else result.message
        updates = _updates(current) if result.updates is None else result.updates
        if next_state == states.PENDING and (
            latest is None or _needs_new_attempt(latest[0], workload)
        ):
            attempt = int(current.get("retryCount") or 0) + 1 if latest is None else latest[1] + 1
            actions.extend(self._create(workload, name, config, attempt, facts))
        return CheckDecision(
            next_state,
            next_message,
            updates if next_state == states.READY else (),
            result.requeue_after,
            tuple(actions),
        )

    @staticmethod
    def _create(
        workload: JsonObject, check_name: str, config: Config, attempt: int, facts: ClusterFacts
    ) -> list[CheckAction]:
        flavors = {object_key(f): f for f in facts.objects(RESOURCE_FLAVORS)}
        templates, request = build_request(workload, check_name, config, attempt, flavors)
        actions: list[CheckAction] = [CreateObject(POD_TEMPLATES, t) for t in templates]
        adopted = tuple((POD_TEMPLATES, object_key(t)) for t in templates)
        actions.append(
            CreateObject(PROVISIONING_REQUESTS, request, adopted, "ProvisioningRequestCreated")
        )
        return actions

    def cleanup(self, workload: JsonObject, facts: ClusterFacts) -> tuple[CheckAction, ...]:
        return tuple(
            DeleteObject(PROVISIONING_REQUESTS, object_key(r))
            for r in owned_requests(workload, facts)
        )

    def workload_keys_for(
        self, rt: ResourceType, new: JsonObject | None, old: JsonObject | None
    ) -> list[str] | None:
        if rt != PROVISIONING_REQUESTS:
            return None
        keys = set()
        for obj in (new, old):
            meta = (obj or {}).get("metadata") or {}
            for ref in meta.get("ownerReferences") or ():
                if ref.get("kind") == "Workload" and ref.get("controller"):
                    keys.add(f"{meta.get('namespace')}/{ref.get('name')}")
        return sorted(keys)


def _updates(check_state: JsonObject) -> tuple[JsonObject, ...]:
    return tuple(check_state.get("podSetUpdates") or ())
