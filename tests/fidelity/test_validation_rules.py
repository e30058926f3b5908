"""CRD validation rules (`x-kubernetes-validations`, CEL): an object that breaks a rule is
refused with kube-apiserver's status, field path and message.

One case per rule of the Kueue CRDs in deploy/crds (each object breaks that rule only), then the
parts of rule evaluation those rules do not reach, on a small CRD of the test's own: evaluation
errors in cel-go's words, `messageExpression`, `reason`, `fieldPath`, `optionalOldSelf`,
transition rules, rules on the status subresource, ratcheting and schema errors that block
the rules.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fidelity.conftest import Backend
from tests.fidelity.harness import MERGE, Client, assert_refused

Obj = dict[str, Any]

KUEUE = "kueue.x-k8s.io"
VERSION = "v1beta2"
NOT_CHECKED = (
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation",
)


@dataclass(frozen=True)
class Case:
    """One broken rule: the object (created, or updated from `before` when the rule is a
    transition rule or lives in the status) and the one error it must get."""

    kind: str
    plural: str
    spec: Obj
    field: str
    message: str
    namespaced: bool = False
    before: Obj | None = None  # the spec first created, when `spec` is an update
    status: Obj | None = None  # a status written after the create
    status_before: Obj | None = None  # a status written first, when `status` updates it
    # More errors that come with this one (a blocking schema error skips the rules).
    more: tuple[tuple[str, str], ...] = ()


def _flavor_group(covered: list[str], resources: list[Obj]) -> Obj:
    return {"coveredResources": covered, "flavors": [{"name": "f", "resources": resources}]}


CPU = {"name": "cpu", "nominalQuota": "1"}
POD_SETS = [
    {
        "name": "main",
        "count": 2,
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    }
]
HOSTNAME = "kubernetes.io/hostname"


def _admission(topology: Obj | None = None, sets: int = 1) -> Obj:
    assignment: Obj = {"name": "main", "count": 2, "flavors": {"cpu": "f"}}
    if topology is not None:
        assignment["topologyAssignment"] = topology
    extra = [{"name": f"extra{i}", "count": 1} for i in range(sets - 1)]
    return {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [assignment, *extra]},
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "reserved",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }


def _slice(domains: int, values: list[Obj], pods: Obj) -> Obj:
    return {"domainCount": domains, "valuesPerLevel": values, "podCounts": pods}


TOPOLOGY_LEVELS = ["rack", HOSTNAME]
GOOD_VALUES = [{"universal": "r1"}, {"individual": {"roots": ["n1", "n2"]}}]
ASSIGNMENT = "status.admission.podSetAssignments[0].topologyAssignment"

CASES: dict[str, Case] = {
    "admissioncheck-controller-name-is-immutable": Case(
        "AdmissionCheck",
        "admissionchecks",
        {"controllerName": "b"},
        "spec.controllerName",
        'Invalid value: "b": field is immutable',
        before={"controllerName": "a"},
    ),
    "clusterqueue-flavors-cover-every-resource": Case(
        "ClusterQueue",
        "clusterqueues",
        {"cohortName": "c", "resourceGroups": [_flavor_group(["cpu", "memory"], [CPU])]},
        "spec.resourceGroups[0]",
        "Invalid value: flavors must have the same number of resources as the coveredResources",
    ),
    "clusterqueue-preference-needs-try-next-flavor": Case(
        "ClusterQueue",
        "clusterqueues",
        {
            "flavorFungibility": {
                "whenCanBorrow": "MayStopSearch",
                "preference": "BorrowingOverPreemption",
            }
        },
        "spec.flavorFungibility",
        "Invalid value: preference can only be set when both whenCanBorrow and whenCanPreempt "
        "are TryNextFlavor",
    ),
    "clusterqueue-reclaim-never-allows-no-borrow-within-cohort": Case(
        "ClusterQueue",
        "clusterqueues",
        {
            "preemption": {
                "reclaimWithinCohort": "Never",
                "borrowWithinCohort": {"policy": "LowerPriority"},
            }
        },
        "spec.preemption",
        "Invalid value: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
    ),
    "clusterqueue-borrowing-limit-needs-a-cohort": Case(
        "ClusterQueue",
        "clusterqueues",
        {"resourceGroups": [_flavor_group(["cpu"], [{**CPU, "borrowingLimit": "1"}])]},
        "spec",
        "Invalid value: borrowingLimit must be nil when cohort is empty",
    ),
    "cohort-flavors-cover-every-resource": Case(
        "Cohort",
        "cohorts",
        {"resourceGroups": [_flavor_group(["cpu", "memory"], [CPU])]},
        "spec.resourceGroups[0]",
        "Invalid value: flavors must have the same number of resources as the coveredResources",
    ),
    "localqueue-cluster-queue-is-immutable": Case(
        "LocalQueue",
        "localqueues",
        {"clusterQueue": "b"},
        "spec.clusterQueue",
        'Invalid value: "b": field is immutable',
        namespaced=True,
        before={"clusterQueue": "a"},
    ),
    "multikueuecluster-has-one-source-not-two": Case(
        "MultiKueueCluster",
        "multikueueclusters",
        {
            "clusterSource": {
                "kubeConfig": {"location": "secret", "locationType": "Secret"},
                "clusterProfileRef": {"name": "profile"},
            }
        },
        "spec.clusterSource",
        "Invalid value: exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
    ),
    "multikueuecluster-has-one-source-not-none": Case(
        "MultiKueueCluster",
        "multikueueclusters",
        {"clusterSource": {}},
        "spec.clusterSource",
        "Invalid value: exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
    ),
    "multikueueconfig-clusters-are-unique": Case(
        "MultiKueueConfig",
        "multikueueconfigs",
        {"clusters": ["a", "b", "a"]},
        "spec.clusters",
        "Invalid value: must be unique",
    ),
    "resourceflavor-toleration-without-key-is-exists": Case(
        "ResourceFlavor",
        "resourceflavors",
        {"tolerations": [{"operator": "Equal", "value": "v", "effect": "NoSchedule"}]},
        "spec.tolerations",
        "Invalid value: operator must be Exists when 'key' is empty, which means 'match all "
        "values and all keys'",
    ),
    "resourceflavor-toleration-seconds-need-no-execute": Case(
        "ResourceFlavor",
        "resourceflavors",
        {
            "tolerations": [
                {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}
            ]
        },
        "spec.tolerations",
        "Invalid value: effect must be 'NoExecute' when 'tolerationSeconds' is set",
    ),
    "resourceflavor-toleration-operator-is-equal-or-exists": Case(
        # The schema's enum refuses the operator first, which blocks the rules.
        "ResourceFlavor",
        "resourceflavors",
        {"tolerations": [{"key": "k", "operator": "Bogus", "effect": "NoSchedule"}]},
        "spec.tolerations[0].operator",
        'Unsupported value: "Bogus": supported values: "Equal", "Exists"',
        more=(NOT_CHECKED,),
    ),
    "resourceflavor-taint-effect-is-supported": Case(
        # The schema's enum refuses the effect first, which blocks the rules.
        "ResourceFlavor",
        "resourceflavors",
        {"nodeTaints": [{"key": "k", "effect": "Bogus"}]},
        "spec.nodeTaints[0].effect",
        'Unsupported value: "Bogus": supported values: "NoSchedule", "PreferNoSchedule", '
        '"NoExecute"',
        more=(NOT_CHECKED,),
    ),
    "resourceflavor-toleration-effect-is-supported": Case(
        "ResourceFlavor",
        "resourceflavors",
        {"tolerations": [{"key": "k", "operator": "Exists", "effect": "Bogus"}]},
        "spec.tolerations[0].effect",
        'Unsupported value: "Bogus": supported values: "NoSchedule", "PreferNoSchedule", '
        '"NoExecute"',
        more=(NOT_CHECKED,),
    ),
    "resourceflavor-toleration-exists-has-no-value": Case(
        "ResourceFlavor",
        "resourceflavors",
        {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]},
        "spec.tolerations",
        "Invalid value: a value must be empty when 'operator' is 'Exists'",
    ),
    "resourceflavor-topology-needs-node-labels": Case(
        "ResourceFlavor",
        "resourceflavors",
        {"topologyName": "t", "nodeLabels": {}},
        "spec",
        "Invalid value: at least one nodeLabel is required when topology is set",
    ),
    "resourceflavor-topology-without-node-labels-fails-evaluation": Case(
        "ResourceFlavor",
        "resourceflavors",
        {"topologyName": "t"},
        "spec",
        'Invalid value: "object": no such key: nodeLabels evaluating rule: at least one '
        "nodeLabel is required when topology is set",
    ),
    "resourceflavor-topology-name-is-immutable": Case(
        "ResourceFlavor",
        "resourceflavors",
        {"topologyName": "u", "nodeLabels": {"pool": "a"}},
        "spec",
        "Invalid value: topologyName is immutable when topologyName is set",
        before={"topologyName": "t", "nodeLabels": {"pool": "a"}},
    ),
    "topology-levels-change-only-above-the-hostname": Case(
        "Topology",
        "topologies",
        {"levels": [{"nodeLabel": "block"}, {"nodeLabel": "zone"}]},
        "spec.levels",
        "Invalid value: levels are mutable only when kubernetes.io/hostname is the lowest level "
        "both before and after the change",
        before={"levels": [{"nodeLabel": "block"}, {"nodeLabel": "rack"}]},
    ),
    "topology-levels-are-unique": Case(
        "Topology",
        "topologies",
        {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "rack"}]},
        "spec.levels",
        "Invalid value: must be unique",
    ),
    "topology-hostname-is-the-lowest-level": Case(
        "Topology",
        "topologies",
        {"levels": [{"nodeLabel": HOSTNAME}, {"nodeLabel": "rack"}]},
        "spec.levels",
        "Invalid value: the kubernetes.io/hostname label can only be used at the lowest level "
        "of topology",
    ),
    "workload-min-count-is-at-most-count": Case(
        "Workload",
        "workloads",
        {"queueName": "q", "podSets": [{**POD_SETS[0], "minCount": 3}]},
        "spec.podSets[0]",
        "Invalid value: minCount should be positive and less or equal to count",
        namespaced=True,
    ),
    "workload-scheduling-group-is-priority-class": Case(
        "Workload",
        "workloads",
        {
            "podSets": POD_SETS,
            "priority": 1,
            "priorityClassRef": {
                "group": "scheduling.k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "p",
            },
        },
        "spec.priorityClassRef",
        "Invalid value: only the PriorityClass kind is allowed for the scheduling.k8s.io group",
        namespaced=True,
    ),
    "workload-kueue-group-is-workload-priority-class": Case(
        "Workload",
        "workloads",
        {
            "podSets": POD_SETS,
            "priority": 1,
            "priorityClassRef": {"group": KUEUE, "kind": "PriorityClass", "name": "p"},
        },
        "spec.priorityClassRef",
        "Invalid value: only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io "
        "group",
        namespaced=True,
    ),
    "workload-priority-class-needs-a-priority": Case(
        "Workload",
        "workloads",
        {
            "podSets": POD_SETS,
            "priorityClassRef": {"group": KUEUE, "kind": "WorkloadPriorityClass", "name": "p"},
        },
        "spec",
        "Invalid value: priority should not be nil when priorityClassRef is set",
        namespaced=True,
    ),
    "workload-admission-has-one-assignment-per-pod-set": Case(
        "Workload",
        "workloads",
        {"podSets": POD_SETS},
        "<nil>",
        "Invalid value: podSetAssignments must have the same number of podSets as the spec",
        namespaced=True,
        status=_admission(sets=2),
    ),
    "workload-cluster-name-is-immutable-once-set": Case(
        "Workload",
        "workloads",
        {"podSets": POD_SETS},
        "status",
        "Invalid value: clusterName is immutable once set",
        namespaced=True,
        status_before={"clusterName": "a"},
        status={"clusterName": "b"},
    ),
    "workload-cluster-name-excludes-nominated-clusters": Case(
        "Workload",
        "workloads",
        {"podSets": POD_SETS},
        "status",
        "Invalid value: clusterName and nominatedClusterNames are mutually exclusive",
        namespaced=True,
        status={"clusterName": "a", "nominatedClusterNames": ["b"]},
    ),
    "workload-topology-values-per-level-match-the-levels": Case(
        "Workload",
        "workloads",
        {"podSets": POD_SETS},
        ASSIGNMENT,
        "Invalid value: valuesPerLevel must have the same length as the number of levels in "
        "this TopologyAssignment",
        namespaced=True,
        status=_admission(
            {
                "levels": TOPOLOGY_LEVELS,
                "slices": [_slice(2, GOOD_VALUES[:1], {"universal": 1})],
            }
        ),
    ),
    "workload-topology-individual-pod-counts-match-the-domains": Case(
        "Workload",
        "workloads",
        {"podSets": POD_SETS},
        f"{ASSIGNMENT}.slices[0]",
        "Invalid value: podCounts.individual must have length equal to domainCount",
        namespaced=True,
        status=_admission(
            {
                "levels": TOPOLOGY_LEVELS,
                "slices": [_slice(2, GOOD_VALUES, {"individual": [1, 1, 1]})],
            }
        ),
    ),
    "workload-topology-individual-roots-match-the-domains": Case(
        "Workload",
        "workloads",
        {"podSets": POD_SETS},
        f"{ASSIGNMENT}.slices[0]",
        "Invalid value: valuesPerLevel.individual, if set, must have roots of length equal to "
        "domainCount of this TopologyAssignmentSlice",
        namespaced=True,
        status=_admission(
            {
                "levels": TOPOLOGY_LEVELS,
                "slices": [
                    _slice(
                        3,
                        [{"universal": "r1"}, {"individual": {"roots": ["n1", "n2"]}}],
                        {"universal": 1},
                    )
                ],
            }
        ),
    ),
    "workload-topology-pod-counts-are-universal-or-individual": Case(
        "Workload",
        "workloads",
        {"podSets": POD_SETS},
        f"{ASSIGNMENT}.slices[0].podCounts",
        "Invalid value: exactly one of the fields in [universal individual] must be set",
        namespaced=True,
        status=_admission(
            {
                "levels": TOPOLOGY_LEVELS,
                "slices": [_slice(2, GOOD_VALUES, {"universal": 1, "individual": [1, 1]})],
            }
        ),
    ),
    "workload-topology-values-are-universal-or-individual": Case(
        "Workload",
        "workloads",
        {"podSets": POD_SETS},
        f"{ASSIGNMENT}.slices[0].valuesPerLevel[0]",
        "Invalid value: exactly one of the fields in [universal individual] must be set",
        namespaced=True,
        status=_admission(
            {
                "levels": TOPOLOGY_LEVELS,
                "slices": [_slice(2, [{}, GOOD_VALUES[1]], {"universal": 1})],
            }
        ),
    ),
}


def _check_update(tolerations: list[Obj]) -> Obj:
    """A Ready admission check whose pod set update adds these tolerations."""
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
CASES.update(
    {
        "workload-pod-set-update-toleration-without-key-is-exists": Case(
            "Workload",
            "workloads",
            {"podSets": POD_SETS},
            UPDATE_TOLERATIONS,
            "Invalid value: operator must be Exists when 'key' is empty, which means 'match "
            "all values and all keys'",
            namespaced=True,
            status=_check_update([{"operator": "Equal", "value": "v"}]),
        ),
        "workload-pod-set-update-toleration-seconds-need-no-execute": Case(
            "Workload",
            "workloads",
            {"podSets": POD_SETS},
            UPDATE_TOLERATIONS,
            "Invalid value: effect must be 'NoExecute' when 'tolerationSeconds' is set",
            namespaced=True,
            status=_check_update(
                [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]
            ),
        ),
        "workload-pod-set-update-toleration-exists-has-no-value": Case(
            "Workload",
            "workloads",
            {"podSets": POD_SETS},
            UPDATE_TOLERATIONS,
            "Invalid value: a value must be empty when 'operator' is 'Exists'",
            namespaced=True,
            status=_check_update([{"key": "k", "operator": "Exists", "value": "v"}]),
        ),
        "workload-pod-set-update-toleration-operator-is-supported": Case(
            "Workload",
            "workloads",
            {"podSets": POD_SETS},
            f"{UPDATE_TOLERATIONS}[0].operator",
            'Unsupported value: "Bogus": supported values: "Equal", "Exists"',
            namespaced=True,
            status=_check_update([{"key": "k", "operator": "Bogus"}]),
            more=(NOT_CHECKED,),
        ),
        "workload-pod-set-update-toleration-effect-is-supported": Case(
            "Workload",
            "workloads",
            {"podSets": POD_SETS},
            f"{UPDATE_TOLERATIONS}[0].effect",
            'Unsupported value: "Bogus": supported values: "NoSchedule", "PreferNoSchedule", '
            '"NoExecute"',
            namespaced=True,
            status=_check_update([{"key": "k", "operator": "Exists", "effect": "Bogus"}]),
            more=(NOT_CHECKED,),
        ),
    }
)


def _path(kind: str, plural: str, namespace: str, namespaced: bool, group: str = KUEUE) -> str:
    version = VERSION if group == KUEUE else "v1"
    where = f"/namespaces/{namespace}" if namespaced else ""
    return f"/apis/{group}/{version}{where}/{plural}"


@pytest.fixture
async def cluster_scoped_names(kube: Client) -> AsyncIterator[list[str]]:
    """Paths of cluster-scoped objects a test created, deleted after it."""
    created: list[str] = []
    yield created
    for path in created:
        await kube.request("DELETE", path)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_kueue_crd_rule(
    kube: Client, namespace: str, cluster_scoped_names: list[str], case: Case
) -> None:
    name = namespace  # unique per test: cluster-scoped objects outlive the namespace
    path = _path(case.kind, case.plural, namespace, case.namespaced)
    if not case.namespaced:
        cluster_scoped_names.append(f"{path}/{name}")
    body: Obj = {
        "apiVersion": f"{KUEUE}/{VERSION}",
        "kind": case.kind,
        "metadata": {"name": name},
        "spec": case.before if case.before is not None else case.spec,
    }
    qualified = f"{case.kind}.{KUEUE}"
    if case.before is None and case.status is None:
        answer = await kube.request("POST", path, body)
        assert_refused(answer, qualified, name, case.field, case.message, case.more)
        return
    stored = await kube.ok("POST", path, body)
    if case.before is not None:
        stored["spec"] = case.spec
        answer = await kube.request("PUT", f"{path}/{name}", stored)
        assert_refused(answer, qualified, name, case.field, case.message)
        return
    if case.status_before is not None:
        stored["status"] = copy.deepcopy(case.status_before)
        stored = await kube.ok("PUT", f"{path}/{name}/status", stored)
    stored["status"] = {**(stored.get("status") or {}), **copy.deepcopy(case.status or {})}
    answer = await kube.request("PUT", f"{path}/{name}/status", stored)
    assert_refused(answer, qualified, name, case.field, case.message, case.more)


async def test_rules_see_the_update_not_only_the_create(kube: Client, namespace: str) -> None:
    """A merge patch that breaks a rule is refused as a create would be."""
    path = _path("ClusterQueue", "clusterqueues", namespace, False)
    body = {
        "apiVersion": f"{KUEUE}/{VERSION}",
        "kind": "ClusterQueue",
        "metadata": {"name": namespace},
    }
    await kube.ok("POST", path, body)
    try:
        patch = {
            "spec": {
                "preemption": {
                    "reclaimWithinCohort": "Never",
                    "borrowWithinCohort": {"policy": "LowerPriority"},
                }
            }
        }
        answer = await kube.request("PATCH", f"{path}/{namespace}", patch, content_type=MERGE)
        assert_refused(
            answer,
            f"ClusterQueue.{KUEUE}",
            namespace,
            "spec.preemption",
            "Invalid value: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
        )
    finally:
        await kube.request("DELETE", f"{path}/{namespace}")


async def test_blocking_schema_errors_skip_the_rules(kube: Client, namespace: str) -> None:
    """An enum violation blocks every rule; kube-apiserver says so in one more error."""
    path = _path("ResourceFlavor", "resourceflavors", namespace, False)
    body = {
        "apiVersion": f"{KUEUE}/{VERSION}",
        "kind": "ResourceFlavor",
        "metadata": {"name": namespace},
        "spec": {"topologyName": "t", "tolerations": [{"key": "k", "operator": "Bogus"}]},
    }
    answer = await kube.request("POST", path, body)
    assert answer.status == 422, answer.body
    causes = [(c["field"], c["message"]) for c in answer.obj["details"]["causes"]]
    assert causes == [
        (
            "spec.tolerations[0].operator",
            'Unsupported value: "Bogus": supported values: "Equal", "Exists"',
        ),
        NOT_CHECKED,
    ]


async def test_every_broken_rule_is_reported(kube: Client, namespace: str) -> None:
    """Several broken rules: one cause each (kube-apiserver's order is a Go map's, so the
    causes are compared as a set) and the aggregate `[a, b]` message."""
    path = _path("ClusterQueue", "clusterqueues", namespace, False)
    case_a = CASES["clusterqueue-reclaim-never-allows-no-borrow-within-cohort"]
    case_b = CASES["clusterqueue-borrowing-limit-needs-a-cohort"]
    body = {
        "apiVersion": f"{KUEUE}/{VERSION}",
        "kind": "ClusterQueue",
        "metadata": {"name": namespace},
        "spec": {**case_a.spec, **case_b.spec},
    }
    answer = await kube.request("POST", path, body)
    assert answer.status == 422, answer.body
    expected = {(case_a.field, case_a.message), (case_b.field, case_b.message)}
    causes = answer.obj["details"]["causes"]
    assert {(c["field"], c["message"]) for c in causes} == expected
    message = answer.obj["message"]
    prefix = f'ClusterQueue.{KUEUE} "{namespace}" is invalid: ['
    assert message.startswith(prefix) and message.endswith("]")
    assert set(message[len(prefix) : -1].split(", spec")) <= {
        f"{case_a.field}: {case_a.message}".removeprefix("spec"),
        f"{case_b.field}: {case_b.message}".removeprefix("spec"),
        f"{case_a.field}: {case_a.message}",
        f"{case_b.field}: {case_b.message}",
    }


# --- rule evaluation beyond what the Kueue CRDs use, on a CRD of this test's own ----------

PROBE_GROUP = "cel.fidelity.mkq.dev"
PROBE_CRD_NAME = f"probes.{PROBE_GROUP}"


def _rule(case: str, rule: str, **more: Any) -> Obj:
    return {"rule": f"self.case != '{case}' || ({rule})", **more}


PROBE_RULES = [
    _rule("index", "self.list[3] == 1", message="index"),
    _rule("div", "self.num / self.zero == 1", message="div"),
    _rule("mod", "self.num % self.zero == 1", message="mod"),
    _rule("overflow", "self.num + 9223372036854775807 > 0", message="overflow"),
    _rule("key", "self.counts['x'] == 1", message="key"),
    _rule("overload", "self.dyn + 1 > 0", message="overload"),
    _rule("msgexpr", "self.num < 0", messageExpression="'case ' + self.case + ' refused'"),
    _rule(
        "badmsgexpr",
        "self.num < 0",
        messageExpression="self.counts['nokey'] == 1 ? 'x' : 'y'",
        message="fallback",
    ),
    _rule(
        "forbidden",
        "self.num < 0",
        message="num must be negative",
        reason="FieldValueForbidden",
        fieldPath=".num",
    ),
    _rule(
        "required",
        "has(self.str)",
        message="str is required",
        reason="FieldValueRequired",
        fieldPath=".str",
    ),
    _rule("duplicate", "self.num < 0", message="dup", reason="FieldValueDuplicate"),
    _rule("mapkey", "self.counts['a'] < 0", message="a is too big", fieldPath=".counts['a']"),
    _rule("nomessage", "self.num < 0"),
    _rule("quantity", "quantity(self.qty).isLessThan(quantity('1Gi'))", message="qty too big"),
    _rule("badquantity", "quantity(self.qty).isLessThan(quantity('1Gi'))", message="bad qty"),
    _rule("sorted", "self.list.isSorted()", message="list must be sorted"),
    _rule("regex", "self.str.find('[0-9]+') == '42'", message="regex"),
    _rule("format", "'%s-%d'.format([self.str, self.num]) == 'a-1'", message="format"),
    _rule("numeric", "1.5 < self.num", message="cross-type numeric comparison"),
    _rule("macros", "self.list.map(x, x * 2).exists(x, x > 10)", message="macros"),
    _rule(
        "optional",
        "oldSelf.hasValue() && oldSelf.value().num == self.num",
        optionalOldSelf=True,
        message="optional old self",
    ),
    _rule("transition", "self.num == oldSelf.num", message="num is immutable"),
]
PROBE_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": PROBE_CRD_NAME},
    "spec": {
        "group": PROBE_GROUP,
        "scope": "Namespaced",
        "names": {
            "plural": "probes",
            "singular": "probe",
            "kind": "Probe",
            "listKind": "ProbeList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "case": {"type": "string", "maxLength": 64},
                                    "list": {
                                        "type": "array",
                                        "maxItems": 10,
                                        "items": {"type": "integer"},
                                    },
                                    "counts": {
                                        "type": "object",
                                        "maxProperties": 10,
                                        "additionalProperties": {"type": "integer"},
                                    },
                                    "num": {"type": "integer"},
                                    "zero": {"type": "integer"},
                                    "dyn": {"x-kubernetes-int-or-string": True},
                                    "str": {"type": "string", "maxLength": 64},
                                    "qty": {"type": "string", "maxLength": 64},
                                },
                                "x-kubernetes-validations": PROBE_RULES,
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "num": {
                                        "type": "integer",
                                        "x-kubernetes-validations": [
                                            {
                                                "rule": "self >= 0",
                                                "message": "num must not be negative",
                                            }
                                        ],
                                    },
                                    "phase": {"type": "string", "maxLength": 16},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}

PROBES: dict[str, tuple[Obj, str, str]] = {
    "index": (
        {"list": [1]},
        "spec",
        'Invalid value: "object": index out of bounds: 3 evaluating rule: index',
    ),
    "div": (
        {"num": 1, "zero": 0},
        "spec",
        'Invalid value: "object": division by zero evaluating rule: div',
    ),
    "mod": (
        {"num": 1, "zero": 0},
        "spec",
        'Invalid value: "object": modulus by zero evaluating rule: mod',
    ),
    "overflow": (
        {"num": 1},
        "spec",
        'Invalid value: "object": integer overflow evaluating rule: overflow',
    ),
    "key": (
        {"counts": {"y": 1}},
        "spec",
        'Invalid value: "object": no such key: x evaluating rule: key',
    ),
    "overload": (
        {"dyn": "a"},
        "spec",
        "Invalid value: \"object\": 'no such overload': call arguments did not match a supported "
        "operator, function or macro signature for rule: overload",
    ),
    "msgexpr": ({"num": 5}, "spec", "Invalid value: case msgexpr refused"),
    "badmsgexpr": ({"num": 5, "counts": {}}, "spec", "Invalid value: fallback"),
    "forbidden": ({"num": 5}, "spec.num", "Forbidden: num must be negative"),
    "required": ({}, "spec.str", "Required value: str is required"),
    "duplicate": ({"num": 5}, "spec", "Duplicate value"),
    "mapkey": ({"counts": {"a": 1}}, "spec.counts[a]", "Invalid value: a is too big"),
    "nomessage": (
        {"num": 5},
        "spec",
        "Invalid value: failed rule: self.case != 'nomessage' || (self.num < 0)",
    ),
    "quantity": ({"qty": "2Gi"}, "spec", "Invalid value: qty too big"),
    "badquantity": (
        {"qty": "2Gx"},
        "spec",
        'Invalid value: "object": quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: bad qty",
    ),
    "sorted": ({"list": [2, 1]}, "spec", "Invalid value: list must be sorted"),
    "regex": ({"str": "a7b"}, "spec", "Invalid value: regex"),
    "format": ({"str": "b", "num": 1}, "spec", "Invalid value: format"),
    "numeric": ({"num": 1}, "spec", "Invalid value: cross-type numeric comparison"),
    "macros": ({"list": [1, 2]}, "spec", "Invalid value: macros"),
    "optional": ({"num": 1}, "spec", "Invalid value: optional old self"),
}


@pytest.fixture
async def probes(kube: Client, backend: Backend, namespace: str) -> str:
    """The probe CRD, established (created once per backend, kept for the session)."""
    del backend
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{PROBE_CRD_NAME}"
    existing = await kube.request("GET", crd_path)
    if existing.status == 404:
        await kube.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", PROBE_CRD)
    path = f"/apis/{PROBE_GROUP}/v1/namespaces/{namespace}/probes"
    for _ in range(100):
        listed = await kube.request("GET", path)
        if listed.status == 200:
            return path
        await asyncio.sleep(0.1)
    raise AssertionError(f"{PROBE_CRD_NAME} was not served")


def _probe(name: str, spec: Obj) -> Obj:
    return {
        "apiVersion": f"{PROBE_GROUP}/v1",
        "kind": "Probe",
        "metadata": {"name": name},
        "spec": spec,
    }


@pytest.mark.parametrize("case", PROBES, ids=PROBES)
async def test_rule_evaluation(kube: Client, probes: str, case: str) -> None:
    spec, field_path, message = PROBES[case]
    answer = await kube.request("POST", probes, _probe("p", {"case": case, **spec}))
    assert_refused(answer, f"Probe.{PROBE_GROUP}", "p", field_path, message)


async def test_transition_rules_run_on_updates_only(kube: Client, probes: str) -> None:
    created = await kube.ok("POST", probes, _probe("t", {"case": "transition", "num": 1}))
    created["spec"]["num"] = 2
    answer = await kube.request("PUT", f"{probes}/t", created)
    assert_refused(answer, f"Probe.{PROBE_GROUP}", "t", "spec", "Invalid value: num is immutable")


async def test_optional_old_self_has_the_stored_value_on_updates(kube: Client, probes: str) -> None:
    created = await kube.ok("POST", probes, _probe("o", {"case": "none", "num": 1}))
    created["spec"] = {"case": "optional", "num": 1}
    await kube.ok("PUT", f"{probes}/o", created)
    stored = await kube.ok("GET", f"{probes}/o")
    stored["spec"]["num"] = 2
    answer = await kube.request("PUT", f"{probes}/o", stored)
    assert_refused(answer, f"Probe.{PROBE_GROUP}", "o", "spec", "Invalid value: optional old self")


async def test_status_rules_run_on_status_writes(kube: Client, probes: str) -> None:
    stored = await kube.ok("POST", probes, _probe("s", {"case": "none"}))
    stored["status"] = {"num": -1}
    answer = await kube.request("PUT", f"{probes}/s/status", stored)
    assert_refused(
        answer,
        f"Probe.{PROBE_GROUP}",
        "s",
        "status.num",
        "Invalid value: -1: num must not be negative",
    )


# --- the rules kube-apiserver checks when a CRD is written -------------------------------

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRD_KIND = "CustomResourceDefinition.apiextensions.k8s.io"
RULE_AT = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
COST_ADVICE = (
    "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where "
    "arrays, maps, and strings are declared)"
)


def _crd_with(plural: str, spec_schema: Obj) -> Obj:
    """A namespaced CRD of the test group whose spec has this schema."""
    kind = plural.capitalize().removesuffix("s")
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{PROBE_GROUP}"},
        "spec": {
            "group": PROBE_GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural[:-1], "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": spec_schema},
                        }
                    },
                }
            ],
        },
    }


def _rule_value(rule: str) -> str:
    """The rule as field.Invalid shows it (apiextensions.ValidationRule in JSON)."""
    return (
        f'{{"Rule":"{rule}","Message":"m","MessageExpression":"","Reason":null,'
        '"FieldPath":"","OptionalOldSelf":null}'
    )


UNCOMPILABLE: dict[str, tuple[str, str]] = {
    "syntax": (
        "self.x ==",
        "compilation failed: ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>' "
        "expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, "
        "NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.x ==\n | .........^",
    ),
    "undeclared": (
        "other == 1",
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'other' (in "
        "container '')\n | other == 1\n | ^",
    ),
    "overload": (
        "1 + true == 2",
        "compilation failed: ERROR: <input>:1:3: found no matching overload for '_+_' "
        "applied to '(int, bool)'\n | 1 + true == 2\n | ..^",
    ),
    "not-bool": ("1 + 2", "cel expression must evaluate to a bool"),
}


@pytest.mark.parametrize("case", UNCOMPILABLE, ids=UNCOMPILABLE)
async def test_crd_whose_rule_does_not_compile_is_refused(
    kube: Client, backend: Backend, case: str
) -> None:
    del backend
    rule, detail = UNCOMPILABLE[case]
    plural = "uncompilables"
    spec = {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "true", "message": "m"},
            {"rule": rule, "message": "m"},
        ],
    }
    answer = await kube.request("POST", CRD_PATH, _crd_with(plural, spec))
    assert_refused(
        answer,
        CRD_KIND,
        f"{plural}.{PROBE_GROUP}",
        f"{RULE_AT}[1].rule",
        f"Invalid value: {_rule_value(rule)}: {detail}",
    )


def _strings(max_items: int | None) -> Obj:
    listed: Obj = {"type": "array", "items": {"type": "string", "maxLength": 8}}
    if max_items is not None:
        listed["maxItems"] = max_items
    return listed


QUADRATIC = "self.items.all(x, self.items.all(y, x.size() >= 0))"

TOTAL_TOO_COSTLY = (
    (
        f"{RULE_AT}[0].rule",
        "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire "
        "OpenAPIv3 schema",
    ),
    (
        "spec.validation.openAPIV3Schema",
        "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 "
        f"schema exceeds budget by factor of more than 100x {COST_ADVICE}",
    ),
)
TOO_COSTLY: dict[str, tuple[Obj, str, tuple[tuple[str, str], ...]]] = {
    # 2,000 items: 2,000 x 2,000 inner iterations of 6 units (cel-go's estimate 24,012,005).
    "bounded": (_strings(2000), "2.4x", ()),
    # No maxItems: as many as a 3 MiB request holds, past the schema's total limit too.
    "unbounded": (_strings(None), "more than 100x", TOTAL_TOO_COSTLY),
}


@pytest.mark.parametrize("case", TOO_COSTLY, ids=TOO_COSTLY)
async def test_crd_whose_rule_is_estimated_too_costly_is_refused(
    kube: Client, backend: Backend, case: str
) -> None:
    del backend
    items, factor, more = TOO_COSTLY[case]
    plural = "costlies"
    spec = {
        "type": "object",
        "properties": {"items": items},
        "x-kubernetes-validations": [{"rule": QUADRATIC, "message": "m"}],
    }
    answer = await kube.request("POST", CRD_PATH, _crd_with(plural, spec))
    assert_refused(
        answer,
        CRD_KIND,
        f"{plural}.{PROBE_GROUP}",
        f"{RULE_AT}[0].rule",
        f"Forbidden: estimated rule cost exceeds budget by factor of {factor} {COST_ADVICE}",
        more,
    )


async def test_crd_whose_rules_are_estimated_too_costly_together_is_refused(
    kube: Client, backend: Backend
) -> None:
    """Each rule fits the per-rule limit (9,009,005 with 1,225 items), twelve do not fit
    the schema's total of 100,000,000: the four dearest are named, then the total."""
    del backend
    plural = "totals"
    rules = [{"rule": f"{QUADRATIC} || {i} > 0", "message": "m"} for i in range(12)]
    spec = {
        "type": "object",
        "properties": {"items": _strings(1225)},
        "x-kubernetes-validations": rules,
    }
    answer = await kube.request("POST", CRD_PATH, _crd_with(plural, spec))
    assert answer.status == 422, answer.body
    causes = [(c["field"], c["message"]) for c in answer.obj["details"]["causes"]]
    contributed = (
        "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire "
        "OpenAPIv3 schema"
    )
    assert causes[:4] == [(f"{RULE_AT}[{i}].rule", contributed) for i in range(4)]
    assert causes[4:] == [
        (
            "spec.validation.openAPIV3Schema",
            "Forbidden: x-kubernetes-validations estimated rule cost total for entire "
            f"OpenAPIv3 schema exceeds budget by factor of 1.081332x {COST_ADVICE}",
        )
    ]


# --- runtime cost limits ----------------------------------------------------------------

COSTS_CRD: Obj = _crd_with(
    "costs",
    {
        "type": "object",
        "properties": {
            "items": _strings(1000),
            "groups": {
                "type": "array",
                "maxItems": 150,
                "items": {
                    "type": "object",
                    "properties": {"v": _strings(100)},
                    "x-kubernetes-validations": [
                        {
                            "rule": f"self.v.all(x, self.v.all(y, x.size() >= -{i}))",
                            "message": f"g{i}",
                        }
                        for i in range(4)
                    ],
                },
            },
        },
        "x-kubernetes-validations": [
            {"rule": f"!has(self.items) || {QUADRATIC}", "message": "quadratic"}
        ],
    },
)


@pytest.fixture
async def costs(kube: Client, backend: Backend, namespace: str) -> str:
    """The cost probe CRD, established (created once per backend, kept for the session)."""
    del backend
    name = COSTS_CRD["metadata"]["name"]
    if (await kube.request("GET", f"{CRD_PATH}/{name}")).status == 404:
        await kube.ok("POST", CRD_PATH, COSTS_CRD)
    path = f"/apis/{PROBE_GROUP}/v1/namespaces/{namespace}/costs"
    for _ in range(100):
        if (await kube.request("GET", path)).status == 200:
            return path
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} was not served")


def _cost(name: str, spec: Obj) -> Obj:
    return {
        "apiVersion": f"{PROBE_GROUP}/v1",
        "kind": "Cost",
        "metadata": {"name": name},
        "spec": spec,
    }


async def test_rule_over_the_per_call_cost_limit_is_cancelled(kube: Client, costs: str) -> None:
    """500 items: 1,500,000 units, past the 1,000,000 one evaluation may cost."""
    answer = await kube.request("POST", costs, _cost("call", {"items": ["ab"] * 500}))
    assert_refused(
        answer,
        f"Cost.{PROBE_GROUP}",
        "call",
        "spec",
        "Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no "
        "further validation rules will be run due to call cost exceeds limit for rule: "
        "quadratic",
    )
    # Within the limit the same rule passes.
    await kube.ok("POST", costs, _cost("within", {"items": ["ab"] * 99}))


async def test_rules_past_the_request_budget_stop_validation(kube: Client, costs: str) -> None:
    """150 groups of 90 values: four rules of about 49,000 units each per group; the
    10,000,000 a write may spend runs out at the 51st group, and no rule runs after it."""
    groups = [{"v": ["ab"] * 90}] * 150
    answer = await kube.request("POST", costs, _cost("budget", {"groups": groups}))
    assert_refused(
        answer,
        f"Cost.{PROBE_GROUP}",
        "budget",
        "spec.groups[50]",
        'Invalid value: "object": validation failed due to running out of cost budget, no '
        "further validation rules will be run",
    )
    await kube.ok("POST", costs, _cost("fits", {"groups": groups[:40]}))


# --- duplicates in list-type map and set lists ------------------------------------------

LISTS_CRD: Obj = _crd_with(
    "lists",
    {
        "type": "object",
        "properties": {
            "byName": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "v": {"type": "integer"}},
                },
            },
            "byTwo": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["a", "b"],
                "items": {
                    "type": "object",
                    "required": ["a", "b"],
                    "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                },
            },
            "names": {
                "type": "array",
                "x-kubernetes-list-type": "set",
                "items": {"type": "string"},
            },
            "numbers": {
                "type": "array",
                "x-kubernetes-list-type": "set",
                "items": {"type": "integer"},
            },
        },
    },
)


async def test_duplicates_in_map_and_set_lists_are_named_once(
    kube: Client, backend: Backend, namespace: str
) -> None:
    """The second occurrence of each repeated key or item, once (a third is not named); a map
    list's duplicate is shown by its keys. kube-apiserver orders the fields by Go's map order,
    so the causes are compared as a set."""
    del backend
    name = LISTS_CRD["metadata"]["name"]
    if (await kube.request("GET", f"{CRD_PATH}/{name}")).status == 404:
        await kube.ok("POST", CRD_PATH, LISTS_CRD)
    path = f"/apis/{PROBE_GROUP}/v1/namespaces/{namespace}/lists"
    for _ in range(100):
        if (await kube.request("GET", path)).status == 200:
            break
        await asyncio.sleep(0.1)
    spec = {
        "byName": [{"name": "a"}, {"name": "b", "v": 1}, {"name": "a", "v": 2}, {"name": "a"}],
        "byTwo": [{"a": "x", "b": 1}, {"a": "x", "b": 2}, {"a": "x", "b": 1}],
        "names": ["x", "y", "x", "x", "y"],
        "numbers": [1, 2, 2],
    }
    body = {"apiVersion": f"{PROBE_GROUP}/v1", "kind": "List", "metadata": {"name": "l"}}
    answer = await kube.request("POST", path, {**body, "spec": spec})
    assert answer.status == 422, answer.body
    causes = {(c["field"], c["message"], c["reason"]) for c in answer.obj["details"]["causes"]}
    assert causes == {
        ("spec.byName[2]", 'Duplicate value: {"name":"a"}', "FieldValueDuplicate"),
        ("spec.byTwo[2]", 'Duplicate value: {"a":"x","b":1}', "FieldValueDuplicate"),
        ("spec.names[2]", 'Duplicate value: "x"', "FieldValueDuplicate"),
        ("spec.names[4]", 'Duplicate value: "y"', "FieldValueDuplicate"),
        ("spec.numbers[2]", "Duplicate value: 2", "FieldValueDuplicate"),
    }


# --- what a workload may not change while its quota is reserved -------------------------

SCHEDULING_REF = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "p"}
KUEUE_REF = {"group": KUEUE, "kind": "WorkloadPriorityClass", "name": "p"}
WHILE_RESERVED: dict[str, tuple[str, Obj, Obj, list[str]]] = {
    "priority-class-ref-is-kept": (
        "QuotaReserved",
        {},
        {"priorityClassRef": KUEUE_REF, "priority": 1},
        ["priorityClassRef is immutable while workload quota reserved"],
    ),
    "priority-class-ref-group-and-kind-are-kept": (
        "QuotaReserved",
        {"priorityClassRef": SCHEDULING_REF, "priority": 1},
        {"priorityClassRef": KUEUE_REF, "priority": 1},
        [
            "priorityClassRef.group is immutable while workload quota reserved",
            "priorityClassRef.kind is immutable while workload quota reserved",
        ],
    ),
    "priority-class-name-is-kept": (
        "QuotaReserved",
        {"priorityClassRef": SCHEDULING_REF, "priority": 1},
        {"priorityClassRef": {**SCHEDULING_REF, "name": "q"}, "priority": 1},
        [
            "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while "
            "workload quota reserved"
        ],
    ),
    "queue-name-is-kept": (
        "QuotaReserved",
        {"queueName": "a"},
        {"queueName": "b"},
        ["queueName is immutable while workload quota reserved"],
    ),
    "maximum-execution-time-is-kept-while-admitted": (
        "Admitted",
        {"maximumExecutionTimeSeconds": 10},
        {"maximumExecutionTimeSeconds": 20},
        ["maximumExecutionTimeSeconds is immutable while workload quota reserved"],
    ),
}


@pytest.mark.parametrize("case", WHILE_RESERVED, ids=WHILE_RESERVED)
async def test_workload_spec_is_kept_while_reserved(
    kube: Client, namespace: str, case: str
) -> None:
    condition, before, after, messages = WHILE_RESERVED[case]
    path = _path("Workload", "workloads", namespace, True)
    body: Obj = {
        "apiVersion": f"{KUEUE}/{VERSION}",
        "kind": "Workload",
        "metadata": {"name": "w"},
        "spec": {"podSets": POD_SETS, **before},
    }
    stored = await kube.ok("POST", path, body)
    stored["status"] = {
        "conditions": [
            {
                "type": condition,
                "status": "True",
                "reason": condition,
                "message": "m",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    stored = await kube.ok("PUT", f"{path}/w/status", stored)
    stored["spec"] = {"podSets": POD_SETS, **after}
    answer = await kube.request("PUT", f"{path}/w", stored)
    expected = [("<nil>", f"Invalid value: {message}") for message in messages]
    assert_refused(answer, f"Workload.{KUEUE}", "w", *expected[0], more=tuple(expected[1:]))
    # Before the quota is reserved, the same change is allowed.
    fresh = await kube.ok("POST", path, {**body, "metadata": {"name": "fresh"}})
    fresh["spec"] = {"podSets": POD_SETS, **after}
    await kube.ok("PUT", f"{path}/fresh", fresh)
