"""kueuectl's create syntax (Kueue's cmd/kueuectl/app/create/*.go) as `mkq ctl` reads it."""

from __future__ import annotations

import pytest

from mkq.ctl import objects
from mkq.ctl.describe import smart_label
from mkq.ctl.errors import CtlError
from mkq.ctl.tables import render_table


def test_flavors_with_the_same_resources_share_one_group_and_limits_merge_into_them() -> None:
    groups = objects.resource_groups(
        {
            "nominal-quota": [
                "alpha:cpu=9;memory=36Gi",
                "beta:cpu=18;memory=72Gi",
                "gpu:nvidia.com/gpu=4",
            ],
            "borrowing-limit": ["alpha:cpu=1;memory=1Gi"],
            "lending-limit": ["beta:cpu=2"],
        }
    )
    assert groups == [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": "alpha",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "9", "borrowingLimit": "1"},
                        {"name": "memory", "nominalQuota": "36Gi", "borrowingLimit": "1Gi"},
                    ],
                },
                {
                    "name": "beta",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "18", "lendingLimit": "2"},
                        {"name": "memory", "nominalQuota": "72Gi"},
                    ],
                },
            ],
        },
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                {"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "4"}]}
            ],
        },
    ]


@pytest.mark.parametrize(
    ("quotas", "words"),
    [
        ({"nominal-quota": ["alpha"]}, "--nominal-quota 'alpha': invalid resources specification"),
        ({"nominal-quota": ["alpha:cpu=9", "beta:cpu=1;memory=1Gi"]}, "invalid resource group"),
        (
            {"nominal-quota": ["alpha:cpu=9"], "borrowing-limit": ["alpha:memory=1Gi"]},
            "--borrowing-limit 'alpha:memory=1Gi': invalid flavor",
        ),
    ],
)
def test_a_bad_quota_names_its_flag_and_value(quotas: dict[str, list[str]], words: str) -> None:
    with pytest.raises(CtlError) as raised:
        objects.resource_groups(quotas)
    assert words in str(raised.value)


def test_taints_and_tolerations_follow_kueuectls_forms() -> None:
    assert objects.taints(["a=b:NoSchedule", "c:NoExecute"]) == [
        {"key": "a", "value": "b", "effect": "NoSchedule"},
        {"key": "c", "effect": "NoExecute"},
    ]
    assert objects.tolerations(["k=v:NoSchedule", "k2", ":PreferNoSchedule"]) == [
        {"key": "k", "value": "v", "effect": "NoSchedule", "operator": "Equal"},
        {"key": "k2", "operator": "Exists"},
        {"effect": "PreferNoSchedule", "operator": "Exists"},
    ]
    with pytest.raises(CtlError, match="invalid taint spec: a=b"):
        objects.taints(["a=b"])
    with pytest.raises(CtlError, match="invalid taint effect: Sometimes"):
        objects.taints(["a:Sometimes"])


def test_a_table_pads_as_kubectls_tabwriter() -> None:
    text = render_table(("Name", "Pending Workloads"), [["a", 0], ["longer-name", 12]])
    assert text == ("NAME          PENDING WORKLOADS\na             0\nlonger-name   12\n")


def test_describe_labels_fields_as_kubectl() -> None:
    assert smart_label("clusterQueue") == "Cluster Queue"
    assert smart_label("apiVersion") == "API Version"
    assert smart_label("uid") == "UID"
    assert smart_label("nvidia.com/gpu") == "nvidia.com/gpu"
