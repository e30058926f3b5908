"""Admission checks in the engine (spec §11): which checks a reservation must pass, that a
reservation is an admission only once they are all Ready, and that failed checks keep a
workload out of scheduling."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

import kueue_api as api
from mkq.commands.simulate import simulate
from worker_agent.engine import (
    AdmissionCheckRule,
    CheckState,
    CheckStatus,
    EngineState,
    StateBuilder,
    applicable_checks,
    checks_message,
    cluster_queue_status,
    is_admitted,
    retry_time,
    run_until_quiescent,
    schedule,
    simulation_report,
    sync_checks,
)
from worker_agent.engine.model import (
    AdmissionCheckSpec,
    ClusterQueueSpec,
    FlavorQuotas,
    FlavorSpec,
    LabelSelector,
    LocalQueueSpec,
    NamespaceSpec,
    PodSetSpec,
    ResourceGroup,
    ResourceQuota,
    WorkloadSpec,
)

README_EXAMPLE = Path(__file__).parents[3] / "deploy/examples/simulate/admission-checks.yaml"

# Kueue's TestAdmissionChecksForWorkload (pkg/workload/workload_test.go).
KUEUE_RULES = (
    AdmissionCheckRule("ac1", ("flavor1",)),
    AdmissionCheckRule("ac2", ("flavor2",)),
    AdmissionCheckRule("ac3", ("flavor1", "flavor2")),
    AdmissionCheckRule("ac4", ("flavor1", "flavor2", "non-existent-flavor")),
    AdmissionCheckRule("ac5", ("non-existent-flavor",)),
    AdmissionCheckRule("ac6"),
)


def test_a_reservation_must_pass_the_checks_on_any_of_its_flavors() -> None:
    got = applicable_checks(KUEUE_RULES, ["flavor1", "flavor2"], {"flavor1", "flavor2"})
    assert got == ("ac1", "ac2", "ac3", "ac4", "ac6")


def test_before_a_reservation_only_checks_covering_every_flavor_apply() -> None:
    assert applicable_checks(KUEUE_RULES, ["flavor1", "flavor2"], None) == ("ac3", "ac4", "ac6")


def test_a_check_without_flavors_applies_to_every_reservation() -> None:
    rules = (AdmissionCheckRule("always"), AdmissionCheckRule("spot-only", ("spot",)))
    assert applicable_checks(rules, ["on-demand", "spot"], {"on-demand"}) == ("always",)


def test_synced_checks_keep_states_add_pending_and_drop_stale_ones() -> None:
    current = (CheckStatus("b", CheckState.READY), CheckStatus("stale", CheckState.RETRY))
    assert sync_checks(current, ["c", "b"]) == (
        CheckStatus("b", CheckState.READY),
        CheckStatus("c", CheckState.PENDING),
    )


def test_retry_time_is_the_latest_asked_for_by_a_retry_check() -> None:
    checks = (
        CheckStatus("a", CheckState.RETRY, last_transition=100.0, requeue_after=30),
        CheckStatus("b", CheckState.RETRY, last_transition=110.0, requeue_after=5),
        CheckStatus("c", CheckState.READY, last_transition=0.0, requeue_after=999),
    )
    assert retry_time(checks) == 130.0
    assert retry_time((CheckStatus("a", CheckState.RETRY, last_transition=1.0),)) is None


def test_messages_name_the_checks_in_a_state_as_kueue_does() -> None:
    checks = (
        CheckStatus("prov", CheckState.RETRY, message="capacity revoked"),
        CheckStatus("approval", CheckState.RETRY),
        CheckStatus("other", CheckState.READY),
    )
    assert checks_message(checks, CheckState.RETRY) == (
        'AdmissionChecks in Retry state: "approval"; "prov" (capacity revoked)'
    )
    assert checks_message(checks[:1], CheckState.RETRY) == (
        'AdmissionCheck in Retry state: "prov" (capacity revoked)'
    )


def _state(rules: tuple[AdmissionCheckRule, ...]) -> EngineState:
    state = EngineState()
    state.upsert_namespace(NamespaceSpec("team"))
    for flavor in ("on-demand", "spot"):
        state.upsert_flavor(FlavorSpec(flavor))
    group = ResourceGroup(
        ("cpu",),
        (
            FlavorQuotas("on-demand", {"cpu": ResourceQuota(2000)}),
            FlavorQuotas("spot", {"cpu": ResourceQuota(10000)}),
        ),
    )
    state.upsert_cluster_queue(
        ClusterQueueSpec(
            "cq",
            resource_groups=(group,),
            namespace_selector=LabelSelector(),
            admission_checks=rules,
        )
    )
    for rule in rules:
        state.upsert_admission_check(AdmissionCheckSpec(rule.name, "example.com/check"))
    state.upsert_local_queue(LocalQueueSpec("team", "lq", "cq"))
    return state


def _wl(name: str, cpu: int, checks: tuple[CheckStatus, ...] = ()) -> WorkloadSpec:
    return WorkloadSpec(
        namespace="team",
        name=name,
        queue_name="lq",
        pod_sets=(PodSetSpec("main", 1, {"cpu": cpu * 1000}),),
        admission_checks=checks,
    )


def test_a_reservation_with_a_pending_check_holds_quota_but_is_not_admitted() -> None:
    state = _state((AdmissionCheckRule("prov"),))
    state.upsert_workload(_wl("a", 1))
    result = schedule(state, now=10.0)
    assert [(d.key, d.admission_checks) for d in result.admissions] == [("team/a", ("prov",))]
    report = simulation_report(state)["workloads"]["team/a"]
    assert report["quotaReserved"] is True and report["admitted"] is False
    assert report["admissionChecks"] == {"prov": {"state": "Pending"}}
    assert report["message"] == "The workload has not all checks ready"
    status = cluster_queue_status(state, "cq")
    assert (status.reserving_workloads, status.admitted_workloads) == (1, 0)


def test_the_reservation_is_an_admission_once_every_check_is_ready() -> None:
    state = _state((AdmissionCheckRule("prov"),))
    state.upsert_workload(_wl("a", 1))
    admission = schedule(state, now=10.0).admissions[0].admission
    ready = replace(
        _wl("a", 1, (CheckStatus("prov", CheckState.READY),)), admission=admission, admitted_at=10
    )
    state.upsert_workload(ready)
    info = state.workloads["team/a"]
    assert is_admitted(state.cluster_queues["cq"].spec, info)
    assert cluster_queue_status(state, "cq").admitted_workloads == 1
    assert simulation_report(state)["workloads"]["team/a"]["admitted"] is True


def test_on_flavors_picks_the_checks_of_the_assigned_flavor() -> None:
    rules = (
        AdmissionCheckRule("on-demand-check", ("on-demand",)),
        AdmissionCheckRule("spot-check", ("spot",)),
    )
    state = _state(rules)
    state.upsert_workload(_wl("small", 1))
    state.upsert_workload(replace(_wl("big", 4), creation_time=1.0))
    decisions = {d.key: d.admission_checks for d in schedule(state, now=10.0).admissions}
    decisions.update({d.key: d.admission_checks for d in schedule(state, now=11.0).admissions})
    assert decisions == {"team/small": ("on-demand-check",), "team/big": ("spot-check",)}


def test_workloads_with_retry_or_rejected_checks_are_not_scheduled() -> None:
    state = _state((AdmissionCheckRule("prov"),))
    state.upsert_workload(_wl("retry", 1, (CheckStatus("prov", CheckState.RETRY),)))
    state.upsert_workload(_wl("rejected", 1, (CheckStatus("prov", CheckState.REJECTED),)))
    state.upsert_workload(replace(_wl("clean", 1), creation_time=5.0))
    run_until_quiescent(state, now=10.0)
    report = simulation_report(state)["workloads"]
    for key in ("team/retry", "team/rejected"):
        assert report[key]["admitted"] is False and report[key]["quotaReserved"] is False
        assert report[key]["reason"] == "PendingEvaluation"
        assert report[key]["message"] == "The workload has failed admission checks"
    assert report["team/clean"]["quotaReserved"] is True


def test_a_workload_backing_off_after_a_retry_waits_until_the_backoff_ends() -> None:
    state = _state((AdmissionCheckRule("prov"),))
    backing_off = replace(_wl("a", 1), requeued_false=True, requeue_at=100.0)
    state.upsert_workload(backing_off)
    assert schedule(state, now=10.0).admissions == ()
    state.upsert_workload(replace(backing_off, requeued_false=False, requeue_at=None))
    assert [d.key for d in schedule(state, now=101.0).admissions] == ["team/a"]


def _check_object(name: str, controller: str, active: str | None) -> api.AdmissionCheck:
    conditions = [] if active is None else [_active_condition(active)]
    return api.AdmissionCheck.model_validate(
        {
            "metadata": {"name": name},
            "spec": {"controllerName": controller},
            "status": {"conditions": conditions},
        }
    )


def _active_condition(status: str) -> dict[str, str]:
    return {
        "type": "Active",
        "status": status,
        "reason": "Active",
        "message": "",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }


def test_a_check_without_an_active_true_condition_makes_its_queue_inactive() -> None:
    state = _state((AdmissionCheckRule("prov"),))
    builder = StateBuilder(state)
    builder.apply(_check_object("prov", "example.com/check", None))
    state.upsert_workload(_wl("a", 1))
    assert schedule(state, now=10.0).admissions == ()
    status = cluster_queue_status(state, "cq")
    assert (status.active, status.reason, status.message) == (
        False,
        "AdmissionCheckInactive",
        "Can't admit new workloads: references inactive AdmissionCheck(s): prov.",
    )
    report = simulation_report(state)["workloads"]["team/a"]
    assert (report["reason"], report["message"]) == ("Suspended", "ClusterQueue cq is inactive")

    builder.apply(_check_object("prov", "example.com/check", "False"))
    assert not cluster_queue_status(state, "cq").active
    builder.apply(_check_object("prov", "example.com/check", "True"))
    assert cluster_queue_status(state, "cq").active
    assert [d.key for d in schedule(state, now=11.0).admissions] == ["team/a"]


def test_multikueue_checks_follow_kueues_limits() -> None:
    multikueue, provisioning = "kueue.x-k8s.io/multikueue", "kueue.x-k8s.io/provisioning-request"
    state = _state((AdmissionCheckRule("mk-a"), AdmissionCheckRule("mk-b", ("spot",))))
    for name in ("mk-a", "mk-b"):
        state.upsert_admission_check(AdmissionCheckSpec(name, multikueue))
    status = cluster_queue_status(state, "cq")
    assert (status.active, status.reason) == (False, "MultipleMultiKueueAdmissionChecks")
    assert status.message == (
        "Can't admit new workloads: Cannot use multiple MultiKueue AdmissionChecks on the same "
        "ClusterQueue, found: mk-a,mk-b, Cannot specify MultiKueue AdmissionCheck per flavor, "
        "found: mk-b."
    )

    state = _state((AdmissionCheckRule("mk", ("on-demand", "spot")), AdmissionCheckRule("prov")))
    state.upsert_admission_check(AdmissionCheckSpec("mk", multikueue))
    state.upsert_admission_check(AdmissionCheckSpec("prov", provisioning))
    status = cluster_queue_status(state, "cq")
    assert (status.reason, status.message) == (
        "MultiKueueWithProvisioningRequest",
        "Can't admit new workloads: Cannot use both MultiKueue and ProvisioningRequest "
        "AdmissionChecks together, found: mk, prov.",
    )


def test_the_readme_simulate_example_holds_quota_until_its_check_is_ready() -> None:
    result = CliRunner().invoke(simulate, [str(README_EXAMPLE), "-o", "json"])
    assert result.exit_code == 0, result.output
    workloads = json.loads(result.stdout)["workloads"]
    held = workloads["default/held"]
    assert (held["quotaReserved"], held["admitted"]) == (True, False)
    assert held["admissionChecks"] == {"prov": {"state": "Pending"}}
    assert (held["reason"], held["message"]) == (
        "UnsatisfiedAdmissionChecks",
        "The workload has not all checks ready",
    )
    assert workloads["default/too-big"]["quotaReserved"] is False
