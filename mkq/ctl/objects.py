"""The objects kueuectl's create verbs build from their flags (Kueue's
`cmd/kueuectl/app/create/create_{localqueue,clusterqueue,resourceflavor}.go`), with its
syntax for quotas (`FLAVOR:RESOURCE=QUANTITY;...`), taints and tolerations."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kueue_api.quantity import Quantity
from mkq.ctl.errors import CtlError

JsonObject = dict[str, Any]
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"

# create_clusterqueue.go parseUserSpecifiedResourceQuotas.
_QUOTA_SPEC = re.compile(
    r"^([a-z0-9][a-z0-9\-\.]{0,252}):((\w+[\.-]?)*\/?\w+=\w+;)*(\w+[\.-]?)*\/?\w+=\w+;?$"
)
_QUOTA_FIELDS = {
    "nominal-quota": "nominalQuota",
    "borrowing-limit": "borrowingLimit",
    "lending-limit": "lendingLimit",
}
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def local_queue(name: str, namespace: str, cluster_queue: str) -> JsonObject:
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }


def cluster_queue(
    name: str,
    *,
    cohort: str = "",
    queuing_strategy: str = "BestEffortFIFO",
    namespace_selector: Mapping[str, str] | None = None,
    reclaim_within_cohort: str = "Never",
    preemption_within_cluster_queue: str = "Never",
    quotas: Mapping[str, Sequence[str]] | None = None,
) -> JsonObject:
    """createClusterQueue: kueuectl always writes the namespace selector (empty: every
    namespace) and both preemption policies (Never unless given). `quotas` maps the flag
    names nominal-quota, borrowing-limit and lending-limit to their values."""
    spec: JsonObject = {
        "queueingStrategy": queuing_strategy,
        "namespaceSelector": (
            {"matchLabels": dict(namespace_selector)} if namespace_selector else {}
        ),
        "preemption": {
            "reclaimWithinCohort": reclaim_within_cohort,
            "withinClusterQueue": preemption_within_cluster_queue,
        },
    }
    if cohort:
        spec["cohortName"] = cohort
    groups = resource_groups(quotas or {})
    if groups:
        spec["resourceGroups"] = groups
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def _quantity(text: str, flag: str, spec: str) -> str:
    try:
        Quantity(text)
    except (ValueError, TypeError) as error:
        raise CtlError(f"--{flag} {spec!r}: invalid resource quota {text!r}") from error
    return text


def _flavor_quotas(spec: str, flag: str) -> tuple[str, list[JsonObject]]:
    """One `FLAVOR:RESOURCE=QUANTITY;...` value: the flavor and its resources."""
    if not _QUOTA_SPEC.match(spec):
        raise CtlError(
            f"--{flag} {spec!r}: invalid resources specification "
            "(FLAVOR:RESOURCE=QUANTITY;RESOURCE=QUANTITY, flavors separated by commas)"
        )
    flavor, _, rest = spec.partition(":")
    resources = []
    for item in filter(None, rest.split(";")):
        resource, _, amount = item.partition("=")
        value = _quantity(amount.strip(), flag, spec)
        resources.append({"name": resource.strip(), _QUOTA_FIELDS[flag]: value})
    return flavor.strip(), resources


def resource_groups(quotas: Mapping[str, Sequence[str]]) -> list[JsonObject]:
    """parseResourceGroups: the flags' flavors merged by name (each limit must name a
    resource its flavor's nominal quota has), then flavors covering the same resources
    grouped; a group sharing some resources with another is refused, as in Kueue."""
    flavors: dict[str, list[JsonObject]] = {}
    for flag in _QUOTA_FIELDS:
        for spec in quotas.get(flag, ()):
            name, resources = _flavor_quotas(spec, flag)
            known = flavors.get(name)
            if known is None:
                flavors[name] = resources
                continue
            for resource in resources:
                match = next((r for r in known if r["name"] == resource["name"]), None)
                if match is None:
                    raise CtlError(
                        f"--{flag} {spec!r}: invalid flavor: resource {resource['name']} is "
                        f"not in the other quotas of flavor {name}"
                    )
                match.update({k: v for k, v in resource.items() if k not in match})
    groups: dict[tuple[str, ...], JsonObject] = {}
    for name, resources in flavors.items():
        for resource in resources:
            resource.setdefault("nominalQuota", "0")
        covered = tuple(r["name"] for r in resources)
        group_id = tuple(sorted(covered))
        if group_id in groups:
            groups[group_id]["flavors"].append({"name": name, "resources": resources})
            continue
        if any(set(group_id) & set(other) for other in groups):
            raise CtlError(
                f"invalid resource group: flavor {name} covers {', '.join(covered)}, which "
                "shares resources with another flavor's group"
            )
        groups[group_id] = {
            "coveredResources": list(covered),
            "flavors": [{"name": name, "resources": resources}],
        }
    return list(groups.values())


def _split_spec_item(text: str, what: str) -> tuple[str, str, str]:
    """create_resourceflavor.go splitSpecItem: KEY[=VALUE][:EFFECT]."""
    parts = text.split(":")
    key_value = parts[0].split("=")
    if len(parts) > 2 or len(key_value) > 2:
        raise CtlError(f"invalid {what} spec: {text}")
    key = key_value[0]
    value = key_value[1] if len(key_value) > 1 else ""
    effect = parts[1] if len(parts) > 1 else ""
    if effect and effect not in _TAINT_EFFECTS:
        raise CtlError(f"invalid taint effect: {effect}, unsupported taint effect")
    return key, value, effect


def taints(specs: Sequence[str]) -> list[JsonObject]:
    """--node-taints: KEY[=VALUE]:EFFECT each, unique by key and effect."""
    result: list[JsonObject] = []
    for text in specs:
        key, value, effect = _split_spec_item(text, "taint")
        if not key or not effect:
            raise CtlError(f"invalid taint spec: {text}")
        if any(t["key"] == key and t["effect"] == effect for t in result):
            raise CtlError(f"duplicated taints with the same key and effect: {text}")
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        result.append(taint)
    return result


def tolerations(specs: Sequence[str]) -> list[JsonObject]:
    """--tolerations: KEY=VALUE:EFFECT, KEY:EFFECT, KEY=VALUE, :EFFECT or KEY; Equal with a
    value, Exists without."""
    result: list[JsonObject] = []
    for text in specs:
        key, value, effect = _split_spec_item(text, "toleration")
        if not key and value:
            raise CtlError(f"invalid toleration spec: {text}")
        toleration: JsonObject = {"operator": "Equal" if key and value else "Exists"}
        if key:
            toleration["key"] = key
        if value:
            toleration["value"] = value
        if effect:
            toleration["effect"] = effect
        result.append(toleration)
    return result


def resource_flavor(
    name: str,
    node_labels: Mapping[str, str],
    node_taints: Sequence[str],
    flavor_tolerations: Sequence[str],
) -> JsonObject:
    spec: JsonObject = {}
    if node_labels:
        spec["nodeLabels"] = dict(node_labels)
    if node_taints:
        spec["nodeTaints"] = taints(node_taints)
    if flavor_tolerations:
        spec["tolerations"] = tolerations(flavor_tolerations)
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": spec,
    }


def key_values(values: Sequence[str], flag: str) -> dict[str, str]:
    """pflag's StringToString: `k=v,k2=v2`, repeatable."""
    result: dict[str, str] = {}
    for value in values:
        for item in filter(None, value.split(",")):
            key, sep, val = item.partition("=")
            if not sep or not key:
                raise CtlError(f"--{flag} {value!r}: want KEY=VALUE[,KEY=VALUE]")
            result[key] = val
    return result


def comma_separated(values: Sequence[str]) -> list[str]:
    """pflag's StringSlice: repeatable, each value split at commas."""
    return [item for value in values for item in value.split(",") if item]
