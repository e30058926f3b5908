"""Broken manifests are rejected with a message that names the offending field."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kueue_api.loader import ValidationFailure, load_text, parse_object

KUEUE = "kueue.x-k8s.io/v1beta2"


def _cq(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec}


def _group(covered: list[str], *flavors: dict[str, Any]) -> dict[str, Any]:
    return {"coveredResources": covered, "flavors": list(flavors)}


def _flavor(name: str, **quotas: Any) -> dict[str, Any]:
    resources = []
    for resource, quota in quotas.items():
        entry = {"name": resource, "nominalQuota": quota}
        if isinstance(quota, dict):
            entry = {"name": resource, **quota}
        resources.append(entry)
    return {"name": name, "resources": resources}


def _workload(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    document = {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": spec,
    }
    if status is not None:
        document["status"] = status
    return document


def _pod_set(name: str = "main", count: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "count": count,
        "template": {
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
        },
        **extra,
    }


_TIME = "2025-01-01T00:00:00Z"

# (case id, document, field path that must be named, words the message must contain)
BROKEN: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "wrong type: nominalQuota is a list",
        _cq({"resourceGroups": [_group(["cpu"], _flavor("f", cpu=[1]))]}),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "quantity",
    ),
    (
        "wrong type: count is a string",
        _workload({"podSets": [_pod_set(count="3")]}),  # type: ignore[arg-type]
        "spec.podSets[0].count",
        "integer",
    ),
    (
        "wrong type: labels value is a number",
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "f"},
            "spec": {"nodeLabels": {"zone": 1}},
        },
        "spec.nodeLabels.zone",
        "string",
    ),
    (
        "unknown field in a ClusterQueue spec",
        _cq({"cohort": "team"}),
        "spec.cohort",
        "unknown field",
    ),
    (
        "unknown field deep in a quota",
        _cq(
            {
                "cohortName": "c",
                "resourceGroups": [
                    _group(["cpu"], _flavor("f", cpu={"nominalQuota": 1, "borowingLimit": 1}))
                ],
            }
        ),
        "spec.resourceGroups[0].flavors[0].resources[0].borowingLimit",
        "unknown field",
    ),
    (
        "unknown top-level field",
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": "n"},
            "spec": {"clusterQueue": "cq"},
            "extra": 1,
        },
        "extra",
        "unknown field",
    ),
    (
        "bad quantity",
        _cq({"resourceGroups": [_group(["cpu"], _flavor("f", cpu="12 cores"))]}),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "regular expression",
    ),
    (
        "bad quantity suffix",
        _cq({"resourceGroups": [_group(["memory"], _flavor("f", memory="1GB"))]}),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "suffix",
    ),
    (
        "negative nominal quota",
        _cq({"resourceGroups": [_group(["cpu"], _flavor("f", cpu="-1"))]}),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "greater than or equal to 0",
    ),
    (
        "borrowingLimit without a cohort",
        _cq(
            {
                "resourceGroups": [
                    _group(["cpu"], _flavor("f", cpu={"nominalQuota": 1, "borrowingLimit": 1}))
                ]
            }
        ),
        # The CRD's rule, at the node declaring it (kube-apiserver refuses before Kueue's
        # webhook, which would name the limit, is called).
        "spec",
        "Invalid value: borrowingLimit must be nil when cohort is empty",
    ),
    (
        "lendingLimit without a cohort",
        _cq(
            {
                "resourceGroups": [
                    _group(["cpu"], _flavor("f", cpu={"nominalQuota": 1, "lendingLimit": 1}))
                ]
            }
        ),
        "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
        "must be nil when cohort is empty",
    ),
    (
        "lendingLimit above nominal",
        _cq(
            {
                "cohortName": "c",
                "resourceGroups": [
                    _group(["cpu"], _flavor("f", cpu={"nominalQuota": 1, "lendingLimit": 2}))
                ],
            }
        ),
        "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
        "less than or equal to the nominalQuota",
    ),
    (
        "cohort borrowingLimit without a parent",
        {
            "apiVersion": KUEUE,
            "kind": "Cohort",
            "metadata": {"name": "c"},
            "spec": {
                "resourceGroups": [
                    _group(["cpu"], _flavor("f", cpu={"nominalQuota": 1, "borrowingLimit": 1}))
                ]
            },
        },
        "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
        "must be nil when parent is empty",
    ),
    (
        "duplicate flavor across groups",
        _cq(
            {
                "resourceGroups": [
                    _group(["cpu"], _flavor("f", cpu=1)),
                    _group(["memory"], _flavor("f", memory=1)),
                ]
            }
        ),
        "spec.resourceGroups[1].flavors[0].name",
        "Duplicate value",
    ),
    (
        "resource in two groups",
        _cq(
            {
                "resourceGroups": [
                    _group(["cpu"], _flavor("a", cpu=1)),
                    _group(["cpu"], _flavor("b", cpu=1)),
                ]
            }
        ),
        "spec.resourceGroups[1].coveredResources[0]",
        "Duplicate value",
    ),
    (
        "flavor resources out of order",
        _cq({"resourceGroups": [_group(["cpu", "memory"], _flavor("f", memory=1, cpu=1))]}),
        "spec.resourceGroups[0].flavors[0].resources[0].name",
        "must match the name in coveredResources",
    ),
    (
        "flavor missing a covered resource",
        _cq({"resourceGroups": [_group(["cpu", "memory"], _flavor("f", cpu=1))]}),
        "spec.resourceGroups[0]",
        "Invalid value: flavors must have the same number of resources as the coveredResources",
    ),
    (
        "more than 16 resource groups",
        _cq(
            {
                "resourceGroups": [
                    _group([f"r{i}"], _flavor(f"f{i}", **{f"r{i}": 1})) for i in range(17)
                ]
            }
        ),
        "spec.resourceGroups",
        "at most 16",
    ),
    (
        "more than 64 flavors in a group",
        _cq({"resourceGroups": [_group(["cpu"], *[_flavor(f"f{i}", cpu=1) for i in range(65)])]}),
        "spec.resourceGroups[0].flavors",
        "at most 64",
    ),
    (
        "empty coveredResources",
        _cq({"resourceGroups": [_group([], _flavor("f"))]}),
        "spec.resourceGroups[0].coveredResources",
        "at least 1",
    ),
    (
        "unsupported queueing strategy",
        _cq({"queueingStrategy": "FIFO"}),
        "spec.queueingStrategy",
        "StrictFIFO",
    ),
    (
        "reclaim Never with borrowWithinCohort",
        _cq(
            {
                "preemption": {
                    "reclaimWithinCohort": "Never",
                    "borrowWithinCohort": {"policy": "LowerPriority"},
                }
            }
        ),
        "spec.preemption",
        "Invalid value: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
    ),
    (
        "fungibility preference without TryNextFlavor",
        # whenCanBorrow defaults to MayStopSearch: the rule fails on the defaulted object.
        _cq({"flavorFungibility": {"preference": "BorrowingOverPreemption"}}),
        "spec.flavorFungibility",
        "Invalid value: preference can only be set when both whenCanBorrow and whenCanPreempt "
        "are TryNextFlavor",
    ),
    (
        "fair sharing weight too small",
        _cq({"fairSharing": {"weight": "1n"}}),
        "spec.fairSharing.weight",
        "10e-9",
    ),
    (
        "bad cohort name",
        _cq({"cohortName": "Team_A"}),
        "spec.cohortName",
        "pattern",
    ),
    (
        "bad object name",
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "Bad_Name"}},
        "metadata.name",
        "RFC 1123",
    ),
    (
        "missing name",
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {}},
        "metadata.name",
        "Required",
    ),
    (
        "namespace selector In without values",
        _cq({"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "In"}]}}),
        "spec.namespaceSelector.matchExpressions[0].values",
        "Required",
    ),
    (
        "admission checks strategy with no checks",
        _cq({"admissionChecksStrategy": {"admissionChecks": []}}),
        "spec.admissionChecksStrategy.admissionChecks",
        "at least 1",
    ),
    (
        "too many podSets",
        _workload({"podSets": [_pod_set(f"p{i}") for i in range(19)]}),
        "spec.podSets",
        "at most 18",
    ),
    (
        "no podSets",
        _workload({"podSets": []}),
        "spec.podSets",
        "at least 1",
    ),
    (
        "duplicate podSet names",
        _workload({"podSets": [_pod_set("a"), _pod_set("a")]}),
        "spec.podSets[1].name",
        "Duplicate value",
    ),
    (
        "podSet name is not a DNS label",
        _workload({"podSets": [_pod_set("Main")]}),
        "spec.podSets[0].name",
        "pattern",
    ),
    (
        "negative count",
        _workload({"podSets": [_pod_set(count=-1)]}),
        "spec.podSets[0].count",
        "greater than or equal to 0",
    ),
    (
        "minCount above count",
        _workload({"podSets": [_pod_set(count=2, minCount=3)]}),
        "spec.podSets[0]",
        "Invalid value: minCount should be positive and less or equal to count",
    ),
    (
        "minCount on two podSets",
        _workload({"podSets": [_pod_set("a", 3, minCount=1), _pod_set("b", 3, minCount=1)]}),
        "spec.podSets",
        "at most one podSet can use minCount",
    ),
    (
        "pods resource in a podSet",
        _workload(
            {
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "c", "resources": {"requests": {"pods": "1"}}}
                                ]
                            }
                        },
                    }
                ]
            }
        ),
        "spec.podSets[0].template.spec.containers[0].resources.requests[pods]",
        "reserved for internal kueue use",
    ),
    (
        "priorityClassRef without priority",
        _workload(
            {
                "podSets": [_pod_set()],
                "priorityClassRef": {
                    "group": "kueue.x-k8s.io",
                    "kind": "WorkloadPriorityClass",
                    "name": "high",
                },
            }
        ),
        "spec",
        "Invalid value: priority should not be nil when priorityClassRef is set",
    ),
    (
        "quota reserved without admission",
        _workload(
            {"podSets": [_pod_set()]},
            {
                "conditions": [
                    {
                        "type": "QuotaReserved",
                        "status": "True",
                        "reason": "QuotaReserved",
                        "message": "",
                        "lastTransitionTime": _TIME,
                    }
                ]
            },
        ),
        "status.admission",
        "must be set while the QuotaReserved condition is true",
    ),
    (
        "resource usage not divisible by count",
        _workload(
            {"podSets": [_pod_set(count=3)]},
            {
                "admission": {
                    "clusterQueue": "cq",
                    "podSetAssignments": [
                        {
                            "name": "main",
                            "count": 3,
                            "flavors": {"cpu": "f"},
                            "resourceUsage": {"cpu": "4"},
                        }
                    ],
                }
            },
        ),
        "status.admission.podSetAssignments[0].resourceUsage[cpu]",
        "not a multiple of 3",
    ),
    (
        "bad condition status",
        _workload(
            {"podSets": [_pod_set()]},
            {
                "conditions": [
                    {
                        "type": "Admitted",
                        "status": "Yes",
                        "reason": "R",
                        "message": "",
                        "lastTransitionTime": _TIME,
                    }
                ]
            },
        ),
        "status.conditions[0].status",
        "'True'",
    ),
    (
        "bad time",
        _workload({"podSets": [_pod_set()]}, {"requeueState": {"requeueAt": "yesterday"}}),
        "status.requeueState.requeueAt",
        "RFC 3339",
    ),
    (
        "topology with hostname not last",
        {
            "apiVersion": KUEUE,
            "kind": "Topology",
            "metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}]},
        },
        "spec.levels",
        "Invalid value: the kubernetes.io/hostname label can only be used at the lowest level "
        "of topology",
    ),
    (
        "topology with repeated level",
        {
            "apiVersion": KUEUE,
            "kind": "Topology",
            "metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "rack"}]},
        },
        "spec.levels",
        "Invalid value: must be unique",
    ),
    (
        "flavor with topology but no node labels",
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "f"},
            "spec": {"topologyName": "t"},
        },
        # Without nodeLabels the rule cannot be evaluated; kube-apiserver says so, naming it.
        "spec",
        'Invalid value: "object": no such key: nodeLabels evaluating rule: at least one '
        "nodeLabel is required when topology is set",
    ),
    (
        "flavor taint with bad effect",
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "f"},
            "spec": {"nodeTaints": [{"key": "k", "value": "v", "effect": "Sometimes"}]},
        },
        "spec.nodeTaints[0].effect",
        "NoSchedule",
    ),
    (
        "flavor toleration Exists with a value",
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "f"},
            "spec": {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]},
        },
        "spec.tolerations",
        "Invalid value: a value must be empty when 'operator' is 'Exists'",
    ),
    (
        "MultiKueueConfig with repeated clusters",
        {
            "apiVersion": KUEUE,
            "kind": "MultiKueueConfig",
            "metadata": {"name": "m"},
            "spec": {"clusters": ["a", "a"]},
        },
        "spec.clusters",
        "Invalid value: must be unique",
    ),
    (
        "MultiKueueCluster with no source",
        {
            "apiVersion": KUEUE,
            "kind": "MultiKueueCluster",
            "metadata": {"name": "m"},
            "spec": {"clusterSource": {}},
        },
        "spec.clusterSource",
        "Invalid value: exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
    ),
    (
        "LocalQueue without a namespace",
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "q"},
            "spec": {"clusterQueue": "cq"},
        },
        "metadata.namespace",
        "namespaced",
    ),
    (
        "WorkloadPriorityClass value out of int32",
        {
            "apiVersion": KUEUE,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": "p"},
            "value": 2**31,
        },
        "value",
        "32-bit",
    ),
    (
        "Job with a negative request",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "n"},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]
                    }
                }
            },
        },
        "spec.template.spec.containers[0].resources.requests[cpu]",
        "greater than or equal to 0",
    ),
    (
        "misspelt field in a Job's container",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "n"},
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "c", "resoures": {"requests": {"cpu": "1"}}}]}
                }
            },
        },
        "spec.template.spec.containers[0].resoures",
        "unknown field",
    ),
    (
        "misspelt field in a Workload's pod template",
        _workload(
            {
                "podSets": [
                    {
                        "name": "main",
                        "template": {
                            "spec": {"containers": [{"name": "c"}], "nodeSelectr": {"a": "b"}}
                        },
                    }
                ]
            }
        ),
        "spec.podSets[0].template.spec.nodeSelectr",
        "unknown field",
    ),
    (
        "Namespace name that is not a DNS label",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team.a"}},
        "metadata.name",
        "RFC 1123 label",
    ),
    (
        "bad resource name in a pod set",
        _workload(
            {
                "podSets": [
                    {
                        "name": "main",
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "c", "resources": {"requests": {"nvidia gpu": "1"}}}
                                ]
                            }
                        },
                    }
                ]
            }
        ),
        "spec.podSets[0].template.spec.containers[0].resources.requests[nvidia gpu]",
        "resource name",
    ),
    (
        "Job whose pods restart Always",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "n"},
            "spec": {
                "template": {"spec": {"containers": [{"name": "c"}], "restartPolicy": "Always"}}
            },
        },
        "spec.template.spec.restartPolicy",
        "OnFailure",
    ),
    (
        "Configuration with an unknown duration",
        {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "waitForPodsReady": {"timeout": "ten minutes"},
        },
        "waitForPodsReady.timeout",
        "duration",
    ),
    (
        "unsupported apiVersion of a known kind",
        {
            "apiVersion": "kueue.x-k8s.io/v1alpha1",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
        },
        "apiVersion",
        "unsupported apiVersion",
    ),
]


@pytest.mark.parametrize(
    ("document", "path", "words"),
    [case[1:] for case in BROKEN],
    ids=[case[0] for case in BROKEN],
)
def test_broken_input_is_rejected_naming_the_field(
    document: dict[str, Any], path: str, words: str
) -> None:
    with pytest.raises(ValidationFailure) as failure:
        parse_object(document)
    messages = [str(error) for error in failure.value.errors]
    assert any(error.path == path and words in error.message for error in failure.value.errors), (
        messages
    )


def test_every_error_is_listed_not_only_the_first() -> None:
    document = _cq(
        {
            "resourceGroups": [
                _group(["cpu"], _flavor("f", cpu={"nominalQuota": "-1", "borrowingLimit": 1})),
                _group(["cpu"], _flavor("f", cpu=1)),
            ]
        }
    )
    with pytest.raises(ValidationFailure) as failure:
        parse_object(document)
    paths = {error.path for error in failure.value.errors}
    assert paths >= {
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "spec",  # the CRD's rule: a borrowingLimit without a cohort
        "spec.resourceGroups[1].coveredResources[0]",
        "spec.resourceGroups[1].flavors[0].name",
    }


def test_loader_errors_name_file_document_kind_and_field() -> None:
    text = yaml.safe_dump_all(
        [
            {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "ok"}},
            _cq({"queueingStrategy": "FIFO"}),
        ]
    )
    result = load_text(text, "queues.yaml")
    assert len(result.objects) == 1
    assert [str(error) for error in result.errors] == [
        "queues.yaml: document 2 (ClusterQueue/cq): spec.queueingStrategy: Input should be "
        "'StrictFIFO' or 'BestEffortFIFO' (got 'FIFO')"
    ]


def test_broken_yaml_is_an_error_not_a_crash() -> None:
    result = load_text("kind: [unclosed", "bad.yaml")
    assert result.objects == []
    assert str(result.errors[0]).startswith("bad.yaml: invalid YAML")


def test_a_document_that_is_not_a_mapping_is_an_error() -> None:
    result = load_text("- a\n- b\n", "list.yaml")
    assert (
        str(result.errors[0]) == "list.yaml: document 1: a document must be a mapping (an object)"
    )


def test_unsupported_kinds_are_flagged() -> None:
    text = "apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nmetadata: {name: a}\n"
    result = load_text(text, "appwrapper.yaml")
    (error,) = result.errors
    assert error.unsupported
    assert "unsupported kind" in str(error)
