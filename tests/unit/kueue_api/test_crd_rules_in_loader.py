"""The loader refuses what the Kueue CRDs' own CEL rules refuse, with the field and the words
kube-apiserver gives: kubesim's answer (which the fidelity suite holds against a real
kube-apiserver) is the reference, and each case also pins the answer itself."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim import schema as kubesim_schema
from kubesim import validation_rules as kubesim_rules
from kueue_api.crd_validation import crd_schema, rule_errors
from kueue_api.loader import ValidationFailure, load_text, parse_object

Obj = dict[str, Any]
KUEUE = "kueue.x-k8s.io/v1beta2"
HOSTNAME = "kubernetes.io/hostname"
ASSIGNMENT = "status.admission.podSetAssignments[0].topologyAssignment"
POD_SETS = [{"name": "main", "count": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}]
GOOD_VALUES = [{"universal": "r1"}, {"individual": {"roots": ["n1", "n2"]}}]


def _object(kind: str, spec: Obj, status: Obj | None = None) -> Obj:
    metadata: Obj = {"name": "x"}
    if kind == "Workload":
        metadata["namespace"] = "ns"
    document: Obj = {"apiVersion": KUEUE, "kind": kind, "metadata": metadata, "spec": spec}
    if status is not None:
        document["status"] = status
    return document


def _workload(status: Obj, **spec: Any) -> Obj:
    return _object("Workload", {"podSets": copy.deepcopy(POD_SETS), **spec}, status)


def _reserved(topology: Obj | None = None, extra_assignments: int = 0) -> Obj:
    assignment: Obj = {"name": "main", "count": 2, "flavors": {"cpu": "f"}}
    if topology is not None:
        assignment["topologyAssignment"] = topology
    extra = [{"name": f"extra{i}", "count": 1} for i in range(extra_assignments)]
    condition = {
        "type": "QuotaReserved",
        "status": "True",
        "reason": "QuotaReserved",
        "message": "reserved",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    return {
        "conditions": [condition],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [assignment, *extra]},
    }


def _topology(domains: int, values: list[Obj], pods: Obj) -> Obj:
    return {
        "levels": ["rack", HOSTNAME],
        "slices": [{"domainCount": domains, "valuesPerLevel": values, "podCounts": pods}],
    }


def _group(covered: list[str]) -> Obj:
    return {
        "coveredResources": covered,
        "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
    }


# (case id, document, field, message): each document breaks one rule of its CRD.
CASES: list[tuple[str, Obj, str, str]] = [
    (
        "cohort flavors cover every resource",
        _object("Cohort", {"resourceGroups": [_group(["cpu", "memory"])]}),
        "spec.resourceGroups[0]",
        "Invalid value: flavors must have the same number of resources as the coveredResources",
    ),
    (
        "flavor toleration without a key is Exists",
        _object("ResourceFlavor", {"tolerations": [{"operator": "Equal", "value": "v"}]}),
        "spec.tolerations",
        "Invalid value: operator must be Exists when 'key' is empty, which means 'match all "
        "values and all keys'",
    ),
    (
        "flavor tolerationSeconds need NoExecute",
        _object(
            "ResourceFlavor",
            {"tolerations": [{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]},
        ),
        "spec.tolerations",
        "Invalid value: effect must be 'NoExecute' when 'tolerationSeconds' is set",
    ),
    (
        "flavor topology needs node labels",
        _object("ResourceFlavor", {"topologyName": "t", "nodeLabels": {}}),
        "spec",
        "Invalid value: at least one nodeLabel is required when topology is set",
    ),
    (
        "MultiKueueCluster has one source, not two",
        _object(
            "MultiKueueCluster",
            {
                "clusterSource": {
                    "kubeConfig": {"location": "secret", "locationType": "Secret"},
                    "clusterProfileRef": {"name": "profile"},
                }
            },
        ),
        "spec.clusterSource",
        "Invalid value: exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
    ),
    (
        "workload scheduling.k8s.io group is a PriorityClass",
        _workload(
            {},
            priority=1,
            priorityClassRef={
                "group": "scheduling.k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "p",
            },
        ),
        "spec.priorityClassRef",
        "Invalid value: only the PriorityClass kind is allowed for the scheduling.k8s.io group",
    ),
    (
        "workload admission has one assignment per pod set (a rule at the root)",
        _workload(_reserved(extra_assignments=1)),
        "<nil>",
        "Invalid value: podSetAssignments must have the same number of podSets as the spec",
    ),
    (
        "workload clusterName excludes nominated clusters",
        _workload({"clusterName": "a", "nominatedClusterNames": ["b"]}),
        "status",
        "Invalid value: clusterName and nominatedClusterNames are mutually exclusive",
    ),
    (
        "workload topology values per level match the levels",
        _workload(_reserved(_topology(2, GOOD_VALUES[:1], {"universal": 1}))),
        ASSIGNMENT,
        "Invalid value: valuesPerLevel must have the same length as the number of levels in "
        "this TopologyAssignment",
    ),
    (
        "workload topology individual pod counts match the domains",
        _workload(_reserved(_topology(2, GOOD_VALUES, {"individual": [1, 1, 1]}))),
        f"{ASSIGNMENT}.slices[0]",
        "Invalid value: podCounts.individual must have length equal to domainCount",
    ),
    (
        "workload topology individual roots match the domains",
        _workload(_reserved(_topology(3, GOOD_VALUES, {"universal": 1}))),
        f"{ASSIGNMENT}.slices[0]",
        "Invalid value: valuesPerLevel.individual, if set, must have roots of length equal to "
        "domainCount of this TopologyAssignmentSlice",
    ),
    (
        "workload topology pod counts are universal or individual",
        _workload(_reserved(_topology(2, GOOD_VALUES, {"universal": 1, "individual": [1, 1]}))),
        f"{ASSIGNMENT}.slices[0].podCounts",
        "Invalid value: exactly one of the fields in [universal individual] must be set",
    ),
    (
        "workload topology values are universal or individual",
        _workload(_reserved(_topology(2, [{}, GOOD_VALUES[1]], {"universal": 1}))),
        f"{ASSIGNMENT}.slices[0].valuesPerLevel[0]",
        "Invalid value: exactly one of the fields in [universal individual] must be set",
    ),
]


def _kubesim_answer(document: Obj) -> list[tuple[str, str]]:
    """What kubesim answers a create of `document` with: its schema errors, then its rules'."""
    schema = crd_schema(document["apiVersion"], document["kind"])
    assert schema is not None
    obj = copy.deepcopy(document)
    result = kubesim_schema.process(dict(schema), obj)
    rules, _ = kubesim_rules.rule_errors(dict(schema), obj, result.errors)
    return [*result.errors, *rules]


@pytest.mark.parametrize(
    ("document", "field", "message"), [case[1:] for case in CASES], ids=[c[0] for c in CASES]
)
def test_a_broken_crd_rule_is_refused_as_kube_apiserver_refuses_it(
    document: Obj, field: str, message: str
) -> None:
    assert _kubesim_answer(document) == [(field, message)]
    assert [(error.path, error.message) for error in rule_errors(document)] == [(field, message)]
    with pytest.raises(ValidationFailure) as failure:
        parse_object(document)
    assert (field, message) in [(error.path, error.message) for error in failure.value.errors]


def test_the_rules_read_the_object_defaulted_as_the_crd_defaults_it() -> None:
    """flavorFungibility's rule compares whenCanBorrow and whenCanPreempt, which the CRD
    defaults to MayStopSearch and TryNextFlavor: with only a preference the rule fails; with
    whenCanBorrow set to TryNextFlavor it holds, whenCanPreempt's default standing in."""
    preference = {"preference": "BorrowingOverPreemption"}
    failing = _object("ClusterQueue", {"flavorFungibility": preference})
    holding = _object(
        "ClusterQueue", {"flavorFungibility": {**preference, "whenCanBorrow": "TryNextFlavor"}}
    )
    assert [error.path for error in rule_errors(failing)] == ["spec.flavorFungibility"]
    assert rule_errors(holding) == []
    before = copy.deepcopy(failing)
    with pytest.raises(ValidationFailure):
        parse_object(failing)
    assert failing == before  # the defaults went into a copy
    parse_object(holding)


def test_rules_run_beside_schema_errors_on_what_the_schema_let_through() -> None:
    """kube-apiserver stops at a blocking schema error (an unknown enum value); the loader
    leaves the refused value out and still reports the rules the rest breaks."""
    document = _object(
        "ResourceFlavor",
        {
            "topologyName": "t",
            "nodeLabels": {},
            "tolerations": [{"key": "k", "operator": "Bogus"}],
        },
    )
    kubesim = _kubesim_answer(document)
    assert kubesim[0] == (
        "spec.tolerations[0].operator",
        'Unsupported value: "Bogus": supported values: "Equal", "Exists"',
    )
    assert "some validation rules were not checked" in kubesim[-1][1]
    with pytest.raises(ValidationFailure) as failure:
        parse_object(document)
    assert [error.path for error in failure.value.errors] == [
        "spec.tolerations[0].operator",
        "spec",
    ]
    assert failure.value.errors[1].message == (
        "Invalid value: at least one nodeLabel is required when topology is set"
    )


def test_kinds_without_a_kueue_crd_have_no_crd_rules() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}
    assert crd_schema("batch/v1", "Job") is None
    assert crd_schema("kueue.x-k8s.io/v1alpha1", "ClusterQueue") is None
    assert rule_errors(job) == []


def test_a_valid_multi_document_file_loads_with_no_rule_errors() -> None:
    text = "\n---\n".join(
        [
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: t}\n"
            f"spec: {{levels: [{{nodeLabel: rack}}, {{nodeLabel: {HOSTNAME}}}]}}",
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n"
            "spec: {topologyName: t, nodeLabels: {pool: a}}",
        ]
    )
    result = load_text(text, "tas.yaml")
    assert result.errors == [] and len(result.objects) == 2


def _check_update(tolerations: list[Obj]) -> Obj:
    return {
        "admissionChecks": [
            {
                "name": "check",
                "state": "Ready",
                "message": "ready",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "podSetUpdates": [{"name": "main", "tolerations": tolerations}],
            }
        ]
    }


UPDATE_TOLERATIONS = "status.admissionChecks[0].podSetUpdates[0].tolerations"
# Kueue's rules on the tolerations an admission check adds (as on a ResourceFlavor's).
CASES.extend(
    [
        (
            "workload pod set update toleration without a key is Exists",
            _workload(_check_update([{"operator": "Equal", "value": "v"}])),
            UPDATE_TOLERATIONS,
            "Invalid value: operator must be Exists when 'key' is empty, which means 'match "
            "all values and all keys'",
        ),
        (
            "workload pod set update tolerationSeconds need NoExecute",
            _workload(
                _check_update([{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}])
            ),
            UPDATE_TOLERATIONS,
            "Invalid value: effect must be 'NoExecute' when 'tolerationSeconds' is set",
        ),
        (
            "workload pod set update Exists toleration has no value",
            _workload(_check_update([{"key": "k", "operator": "Exists", "value": "v"}])),
            UPDATE_TOLERATIONS,
            "Invalid value: a value must be empty when 'operator' is 'Exists'",
        ),
    ]
)


@pytest.mark.parametrize(
    ("document", "field", "message"),
    [case[1:] for case in CASES[-3:]],
    ids=[c[0] for c in CASES[-3:]],
)
def test_pod_set_update_tolerations_are_checked(document: Obj, field: str, message: str) -> None:
    test_a_broken_crd_rule_is_refused_as_kube_apiserver_refuses_it(document, field, message)


def test_a_taint_effect_outside_the_enum_is_refused() -> None:
    """The CRD's rule on effects is behind its enum: kube-apiserver (and kubesim) refuse the
    value with the enum's words; the loader refuses it too."""
    for spec, at in (
        ({"nodeTaints": [{"key": "k", "effect": "Bogus"}]}, "spec.nodeTaints[0].effect"),
        ({"tolerations": [{"key": "k", "effect": "Bogus"}]}, "spec.tolerations[0].effect"),
    ):
        document = _object("ResourceFlavor", spec)
        answer = _kubesim_answer(document)
        assert answer[0] == (
            at,
            'Unsupported value: "Bogus": supported values: "NoSchedule", "PreferNoSchedule", '
            '"NoExecute"',
        )
        with pytest.raises(ValidationFailure) as failure:
            parse_object(document)
        assert at in [error.path for error in failure.value.errors]


def _condition(kind: str) -> Obj:
    return {
        "conditions": [
            {
                "type": kind,
                "status": "True",
                "reason": kind,
                "message": "m",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }


SCHEDULING_REF = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "p"}


@pytest.mark.parametrize(
    ("condition", "before", "after", "message"),
    [
        (
            "QuotaReserved",
            {},
            {"priority": 1, "priorityClassRef": {**SCHEDULING_REF}},
            "priorityClassRef is immutable while workload quota reserved",
        ),
        (
            "QuotaReserved",
            {"priority": 1, "priorityClassRef": SCHEDULING_REF},
            {"priority": 1, "priorityClassRef": {**SCHEDULING_REF, "name": "q"}},
            "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while "
            "workload quota reserved",
        ),
        (
            "QuotaReserved",
            {"queueName": "a"},
            {"queueName": "b"},
            "queueName is immutable while workload quota reserved",
        ),
        (
            "Admitted",
            {},
            {"maximumExecutionTimeSeconds": 20},
            "maximumExecutionTimeSeconds is immutable while workload quota reserved",
        ),
    ],
)
def test_workload_updates_while_reserved_are_refused(
    condition: str, before: Obj, after: Obj, message: str
) -> None:
    old = _workload(_condition(condition), **before)
    new = _workload(_condition(condition), **after)
    assert [(e.path, e.message) for e in rule_errors(new, old)] == [
        ("<nil>", f"Invalid value: {message}")
    ]
    # Before the quota is reserved, the same change is allowed.
    assert rule_errors(_workload({}, **after), _workload({}, **before)) == []
