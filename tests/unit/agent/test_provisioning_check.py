"""The ProvisioningRequest check's decisions, case by case from Kueue's own tests of it
(pkg/controller/admissionchecks/provisioning/controller_test.go: TestReqIsNeeded,
TestMergePodSetsSkipsZeroCounts, TestReconcile), written against our pure `decide`."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import pytest

from worker_agent.admission_checks import states
from worker_agent.admission_checks.base import ClusterFacts, CreateObject, DeleteObject
from worker_agent.admission_checks.provisioning import (
    CHECK_INACTIVE_MESSAGE,
    CLASS_ANNOTATION,
    CONSUME_ANNOTATION,
    NO_REQUEST_NEEDED,
    Config,
    ProvisioningRequestCheck,
    attempt_of,
    limit_name,
    merged_pod_sets,
    request_name,
    request_needed,
)
from worker_agent.cache import object_key
from worker_agent.resources import (
    POD_TEMPLATES,
    PROVISIONING_REQUEST_CONFIGS,
    PROVISIONING_REQUESTS,
    RESOURCE_FLAVORS,
    ResourceType,
)

Obj = dict[str, Any]
NS = "ns"


class Facts(ClusterFacts):
    """What the informers would hold: objects by resource type."""

    def __init__(self, objects: dict[ResourceType, list[Obj]]) -> None:
        self._objects = objects

    def objects(self, rt: ResourceType) -> Iterable[Obj]:
        return list(self._objects.get(rt, ()))

    def get(self, rt: ResourceType, key: str) -> Obj | None:
        return next((o for o in self._objects.get(rt, ()) if object_key(o) == key), None)


def pod_set(
    name: str, count: int, requests: dict[str, str], limits: dict[str, str] | None = None
) -> Obj:
    resources: Obj = {"requests": requests}
    if limits:
        resources["limits"] = limits
    return {
        "name": name,
        "count": count,
        "template": {"spec": {"containers": [{"name": "c", "resources": resources}]}},
    }


def workload(
    pod_sets: list[Obj],
    assignments: list[Obj] | None,
    checks: list[Obj] | None = None,
    conditions: list[Obj] | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    status: Obj = {
        "conditions": [{"type": "QuotaReserved", "status": "True"}, *(conditions or [])],
        "admissionChecks": checks
        if checks is not None
        else [
            {"name": "check1", "state": "Pending"},
            {"name": "not-provisioning", "state": "Pending"},
        ],
    }
    if assignments is not None:
        status["admission"] = {"clusterQueue": "q1", "podSetAssignments": assignments}
    meta: Obj = {"name": "wl", "namespace": NS, "uid": "wl-uid"}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": meta,
        "spec": {"podSets": pod_sets},
        "status": status,
    }


def base_workload(**kwargs: Any) -> Obj:
    """Kueue's baseWorkload: ps1 (4 pods, 1 CPU) on flv1, ps2 (4 pods, 1M memory, 3 admitted)
    on flv2."""
    return workload(
        [pod_set("ps1", 4, {"cpu": "1"}), pod_set("ps2", 4, {"memory": "1M"})],
        [
            {"name": "ps1", "flavors": {"cpu": "flv1"}, "count": 4},
            {"name": "ps2", "flavors": {"cpu": "flv2"}, "count": 3},
        ],
        **kwargs,
    )


FLAVORS = [
    {
        "metadata": {"name": "flv1"},
        "spec": {
            "nodeLabels": {"f1l1": "v1"},
            "tolerations": [
                {"key": "f1t1k", "value": "f1t1v", "operator": "Equal", "effect": "NoSchedule"}
            ],
        },
    },
    {"metadata": {"name": "flv2"}, "spec": {"nodeLabels": {"f2l1": "v1"}}},
]
CHECK = {
    "metadata": {"name": "check1"},
    "spec": {
        "controllerName": "kueue.x-k8s.io/provisioning-request",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "ProvisioningRequestConfig",
            "name": "config1",
        },
    },
}


def config(**spec: Any) -> Obj:
    base = {
        "provisioningClassName": "class1",
        "parameters": {"p1": "v1"},
        "retryStrategy": {
            "backoffLimitCount": 3,
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 1800,
        },
    }
    return {"metadata": {"name": "config1"}, "spec": {**base, **spec}}


def request(
    attempt: int = 1, *conditions: str, owner: str = "wl-uid", name: str | None = None
) -> Obj:
    name = name or f"wl-check1-{attempt}"
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {
            "name": name,
            "namespace": NS,
            "ownerReferences": [
                {"kind": "Workload", "name": "wl", "uid": owner, "controller": True}
            ],
        },
        "spec": {
            "provisioningClassName": "class1",
            "parameters": {"p1": "v1"},
            "podSets": [
                {"podTemplateRef": {"name": f"ppt-{name}-ps1"}, "count": 4},
                {"podTemplateRef": {"name": f"ppt-{name}-ps2"}, "count": 3},
            ],
        },
        "status": {
            "conditions": [{"type": c, "status": "True", "message": "By test"} for c in conditions]
        },
    }


def decide(wl: Obj, configs: list[Obj] | None = None, requests: list[Obj] | None = None) -> Any:
    facts = Facts(
        {
            RESOURCE_FLAVORS: FLAVORS,
            PROVISIONING_REQUEST_CONFIGS: [config()] if configs is None else configs,
            PROVISIONING_REQUESTS: requests or [],
        }
    )
    return ProvisioningRequestCheck().decide(wl, CHECK, facts)


def creates(decision: Any) -> list[CreateObject]:
    return [a for a in decision.actions if isinstance(a, CreateObject)]


def deletes(decision: Any) -> list[str]:
    return [a.key for a in decision.actions if isinstance(a, DeleteObject)]


# --- TestReqIsNeeded / TestMergePodSetsSkipsZeroCounts ---------------------------------


def _one(spec_count: int, admitted: int | None, assigned: bool = True) -> Obj:
    assignment: Obj = {"name": "ps"}
    if admitted is not None:
        assignment["count"] = admitted
    return workload([pod_set("ps", spec_count, {"cpu": "1"})], [assignment] if assigned else [])


CPU_CONFIG = Config.from_object({"spec": {"managedResources": ["cpu"]}})


@pytest.mark.parametrize(
    ("wl", "needed"),
    [
        pytest.param(_one(1, 1), True, id="positive admitted count needs request"),
        pytest.param(_one(1, None), True, id="missing admitted count falls back to spec count"),
        pytest.param(_one(1, 0), False, id="zero admitted count does not need request"),
        pytest.param(_one(0, None, False), False, id="zero spec count does not require assignment"),
        pytest.param(
            workload(
                [pod_set("ps1", 1, {"cpu": "1"}), pod_set("ps2", 1, {"cpu": "1"})],
                [{"name": "ps1", "count": 1}],
            ),
            True,
            id="needed podset short circuits later missing assignment",
        ),
    ],
)
def test_request_needed(wl: Obj, needed: bool) -> None:
    assert request_needed(wl, CPU_CONFIG) is needed


def test_missing_assignment_is_an_inconsistency() -> None:
    with pytest.raises(ValueError, match="missing assignment"):
        request_needed(_one(1, None, False), CPU_CONFIG)


def _counts(spec: list[int], admitted: list[int]) -> Obj:
    return workload(
        [pod_set(f"ps{i}", n, {"cpu": "1"}) for i, n in enumerate(spec)],
        [{"name": f"ps{i}", "count": n} for i, n in enumerate(admitted)],
    )


@pytest.mark.parametrize(
    ("wl", "policy", "want"),
    [
        pytest.param(_counts([0, 2], [0, 2]), None, [("ps1", 2)], id="zero spec count"),
        pytest.param(
            _counts([1, 2], [0, 2]), None, [("ps1", 2)], id="zero admission count override"
        ),
        pytest.param(
            _counts([1, 2, 3], [0, 2, 3]),
            "IdenticalPodTemplates",
            [("ps1", 5)],
            id="zero count does not block compatible merging",
        ),
        pytest.param(
            workload(
                [
                    pod_set("ps1", 1, {"cpu": "1"}),
                    pod_set("ps2", 1, {"cpu": "1"}, {"cpu": "2"}),
                    pod_set("ps3", 1, {"cpu": "1"}),
                ],
                [{"name": f"ps{i}", "count": 1} for i in (1, 2, 3)],
            ),
            "IdenticalWorkloadSchedulingRequirements",
            [("ps1", 3)],
            id="same requests merge whatever the limits",
        ),
    ],
)
def test_merged_pod_sets(wl: Obj, policy: str | None, want: list[tuple[str, int]]) -> None:
    merged = merged_pod_sets(wl, Config.from_object({"spec": {"podSetMergePolicy": policy}}))
    assert [(m.name, m.count) for m in merged] == want


def test_names_are_limited_with_a_hash_and_parse_back() -> None:
    assert request_name("wl", "check1", 3) == "wl-check1-3"
    assert attempt_of("wl-check1-3", "wl", "check1") == 3
    assert attempt_of("wl-check2-3", "wl", "check1") is None
    long = "w" * 300
    name = request_name(long, "check1", 1)
    assert len(name) == 253 and name == limit_name(f"{long}-check1-1")
    assert name[:247] == f"{long}-check1-1"[:247] and name[247] == "-"


# --- TestReconcile ----------------------------------------------------------------------


def test_missing_config_leaves_the_check_pending_as_inactive() -> None:
    decision = decide(base_workload(), configs=[])
    assert (decision.state, decision.message) == ("Pending", CHECK_INACTIVE_MESSAGE)
    assert decision.actions == ()


def test_with_config_writes_the_request_and_its_templates() -> None:
    decision = decide(base_workload())
    assert decision.state == "Pending" and not decision.message
    made = creates(decision)
    assert [(c.rt, c.body["metadata"]["name"]) for c in made] == [
        (POD_TEMPLATES, "ppt-wl-check1-1-ps1"),
        (POD_TEMPLATES, "ppt-wl-check1-1-ps2"),
        (PROVISIONING_REQUESTS, "wl-check1-1"),
    ]
    template1, template2, provreq = (c.body for c in made)
    assert provreq["metadata"]["labels"] == {"kueue.x-k8s.io/managed": "true"}
    assert provreq["metadata"]["ownerReferences"][0]["uid"] == "wl-uid"
    assert provreq["spec"] == {
        "provisioningClassName": "class1",
        "parameters": {"p1": "v1"},
        "podSets": [
            {"podTemplateRef": {"name": "ppt-wl-check1-1-ps1"}, "count": 4},
            {"podTemplateRef": {"name": "ppt-wl-check1-1-ps2"}, "count": 3},
        ],
    }
    assert made[2].adopts == (
        (POD_TEMPLATES, f"{NS}/ppt-wl-check1-1-ps1"),
        (POD_TEMPLATES, f"{NS}/ppt-wl-check1-1-ps2"),
    )
    spec1 = template1["template"]["spec"]
    assert spec1["nodeSelector"] == {"f1l1": "v1"}
    assert spec1["tolerations"] == FLAVORS[0]["spec"]["tolerations"]
    assert template2["template"]["spec"]["nodeSelector"] == {"f2l1": "v1"}


def test_only_zero_count_pod_sets_need_no_request_and_remove_it() -> None:
    wl = base_workload()
    for ps in wl["spec"]["podSets"]:
        ps["count"] = 0
    for psa in wl["status"]["admission"]["podSetAssignments"]:
        psa["count"] = 0
    decision = decide(wl, requests=[request()])
    assert (decision.state, decision.message) == ("Ready", NO_REQUEST_NEEDED)
    assert deletes(decision) == [f"{NS}/wl-check1-1"] and not creates(decision)


def test_workload_annotations_become_parameters() -> None:
    wl = workload(
        [pod_set("main", 1, {"cpu": "1"})],
        [{"name": "main", "count": 1}],
        checks=[{"name": "check1", "state": "Pending"}],
        annotations={
            "provreq.kueue.x-k8s.io/ValidUntilSeconds": "0",
            "invalid-provreq-prefix/Foo1": "Bar1",
        },
    )
    decision = decide(wl, configs=[{"metadata": {"name": "config1"}, "spec": {}}])
    provreq = creates(decision)[-1].body
    assert provreq["spec"]["parameters"] == {"ValidUntilSeconds": "0"}
    assert provreq["spec"]["podSets"] == [
        {"podTemplateRef": {"name": "ppt-wl-check1-1-main"}, "count": 1}
    ]


def test_requests_no_check_accounts_for_are_removed() -> None:
    decision = decide(base_workload(), requests=[request(name="wl-check2")])
    assert deletes(decision) == [f"{NS}/wl-check2"]
    assert creates(decision)[-1].body["metadata"]["name"] == "wl-check1-1"


def test_request_out_of_sync_with_the_config_is_replaced() -> None:
    stale = request()
    stale["spec"]["provisioningClassName"] = "class0"
    decision = decide(base_workload(), requests=[stale])
    assert deletes(decision) == [f"{NS}/wl-check1-1"]
    assert creates(decision)[-1].body["spec"]["provisioningClassName"] == "class1"


def test_a_kept_retry_count_names_the_next_attempt() -> None:
    wl = base_workload(
        checks=[
            {"name": "check1", "state": "Pending", "retryCount": 1},
            {"name": "not-provisioning", "state": "Pending"},
        ]
    )
    decision = decide(wl)
    assert decision.state == "Pending"
    assert creates(decision)[-1].body["metadata"]["name"] == "wl-check1-2"


def test_failed_request_is_retried_with_backoff() -> None:
    decision = decide(
        base_workload(),
        configs=[
            config(
                retryStrategy={
                    "backoffLimitCount": 2,
                    "backoffBaseSeconds": 60,
                    "backoffMaxSeconds": 1800,
                }
            )
        ],
        requests=[request(1, "Failed")],
    )
    assert (decision.state, decision.message) == ("Retry", "Retrying after failure: By test")
    assert decision.requeue_after_seconds == 60
    assert not creates(decision) and not deletes(decision)


@pytest.mark.parametrize(("retries", "want"), [(0, 60), (1, 120), (3, 480), (10, 1800)])
def test_retry_backoff_doubles_up_to_the_cap(retries: int, want: int) -> None:
    wl = base_workload(checks=[{"name": "check1", "state": "Pending", "retryCount": retries}])
    limit = {"backoffLimitCount": 20, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
    decision = decide(
        wl, configs=[config(retryStrategy=limit)], requests=[request(retries + 1, "Failed")]
    )
    assert (decision.state, decision.requeue_after_seconds) == ("Retry", want)


def test_failed_request_without_retries_rejects() -> None:
    limit = {"backoffLimitCount": 0, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
    decision = decide(
        base_workload(), configs=[config(retryStrategy=limit)], requests=[request(1, "Failed")]
    )
    assert (decision.state, decision.message) == ("Rejected", "By test")


def test_an_old_failed_attempt_already_retried_starts_the_next() -> None:
    wl = base_workload(checks=[{"name": "check1", "state": "Pending", "retryCount": 1}])
    decision = decide(wl, requests=[request(1, "Failed")])
    assert (decision.state, decision.message) == ("Pending", "Retrying after failure: By test")
    assert deletes(decision) == []
    assert creates(decision)[-1].body["metadata"]["name"] == "wl-check1-2"


def test_provisioned_request_makes_the_check_ready_with_pod_set_updates() -> None:
    decision = decide(base_workload(), requests=[request(1, "Provisioned")])
    assert (decision.state, decision.message) == ("Ready", "By test")
    annotations = {CONSUME_ANNOTATION: "wl-check1-1", CLASS_ANNOTATION: "class1"}
    assert decision.pod_set_updates == (
        {"name": "ps1", "annotations": annotations},
        {"name": "ps2", "annotations": annotations},
    )


def test_node_selector_from_provisioning_class_details() -> None:
    provisioned = request(1, "Provisioned")
    provisioned["status"]["provisioningClassDetails"] = {"node-selector-value": "sel"}
    updates = {
        "nodeSelector": [
            {"key": "node-selector-key", "valueFromProvisioningClassDetail": "node-selector-value"}
        ]
    }
    decision = decide(
        base_workload(), configs=[config(podSetUpdates=updates)], requests=[provisioned]
    )
    assert [u["nodeSelector"] for u in decision.pod_set_updates] == [
        {"node-selector-key": "sel"}
    ] * 2
    missing = {"nodeSelector": [{"key": "k", "valueFromProvisioningClassDetail": "absent"}]}
    decision = decide(
        base_workload(),
        configs=[config(podSetUpdates=missing)],
        requests=[request(1, "Provisioned")],
    )
    assert all("nodeSelector" not in u for u in decision.pod_set_updates)


def test_removed_request_of_a_ready_check_is_not_written_again() -> None:
    wl = base_workload(checks=[{"name": "check1", "state": "Ready", "message": "ok"}])
    decision = decide(wl)
    assert (decision.state, decision.message, decision.actions) == ("Ready", "ok", ())


def test_accepted_request_passes_on_its_eta() -> None:
    accepted = request(1, "Accepted")
    accepted["status"]["conditions"].append(
        {"type": "Provisioned", "status": "False", "message": "ETA 5m"}
    )
    decision = decide(base_workload(), requests=[accepted])
    assert (decision.state, decision.message) == ("Pending", "ETA 5m")


def test_request_without_conditions_clears_an_old_message() -> None:
    wl = base_workload(checks=[{"name": "check1", "state": "Pending", "message": "Error creating"}])
    decision = decide(wl, requests=[request(1)])
    assert (decision.state, decision.message, decision.actions) == ("Pending", "", ())


@pytest.mark.parametrize(
    ("admitted", "finished", "want"),
    [(True, False, "Rejected"), (False, False, "Rejected"), (True, True, "Ready")],
)
def test_capacity_revoked(admitted: bool, finished: bool, want: str) -> None:
    conditions = []
    if admitted:
        conditions.append({"type": "Admitted", "status": "True"})
    if finished:
        conditions.append({"type": "Finished", "status": "True"})
    wl = base_workload(checks=[{"name": "check1", "state": "Ready"}], conditions=conditions)
    decision = decide(wl, requests=[request(1, "Provisioned", "CapacityRevoked")])
    assert decision.state == want


@pytest.mark.parametrize(
    ("admitted", "limit", "want"),
    [
        (True, 3, ("Ready", "")),
        (False, 3, ("Retry", "Retrying after booking expired: By test")),
        (False, 0, ("Rejected", "By test")),
    ],
)
def test_booking_expired(admitted: bool, limit: int, want: tuple[str, str]) -> None:
    conditions = [{"type": "Admitted", "status": "True"}] if admitted else []
    wl = base_workload(
        checks=[{"name": "check1", "state": "Ready", "message": ""}], conditions=conditions
    )
    retry = {"backoffLimitCount": limit, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
    decision = decide(
        wl,
        configs=[config(retryStrategy=retry)],
        requests=[request(1, "Provisioned", "BookingExpired")],
    )
    assert (decision.state, decision.message) == want


@pytest.mark.parametrize("condition", ["Finished", "Evicted"])
def test_finished_or_evicted_workload_has_its_requests_removed(condition: str) -> None:
    wl = base_workload(conditions=[{"type": condition, "status": "True"}])
    facts = Facts({PROVISIONING_REQUESTS: [request(1), request(1, owner="other")]})
    actions = ProvisioningRequestCheck().cleanup(wl, facts)
    assert [a.key for a in actions if isinstance(a, DeleteObject)] == [f"{NS}/wl-check1-1"]


def test_activity_follows_the_parameters_reference() -> None:
    controller = ProvisioningRequestCheck()
    assert controller.activity(CHECK, Facts({PROVISIONING_REQUEST_CONFIGS: [config()]})).active
    missing = controller.activity(CHECK, Facts({}))
    assert (missing.active, missing.reason) == (False, "BadParametersRef")
    assert missing.message == 'provisioningrequestconfigs.kueue.x-k8s.io "config1" not found'
    wrong = copy.deepcopy(CHECK)
    wrong["spec"]["parameters"]["kind"] = "Other"
    assert controller.activity(wrong, Facts({})).message == (
        'wrong kind "Other", expecting "ProvisioningRequestConfig": bad parameters reference'
    )
    del wrong["spec"]["parameters"]
    assert controller.activity(wrong, Facts({})).message == "missing parameters reference"


def test_a_decision_never_changes_the_workload_it_was_given() -> None:
    wl = base_workload()
    before = copy.deepcopy(wl)
    decide(wl, requests=[request(1, "Provisioned")])
    decide(wl)
    assert wl == before
    assert states.find_check(wl, "check1") == {"name": "check1", "state": "Pending"}
