"""Applying the demo's YAML to a cluster, the way `kubectl apply -f` would create it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import ResourceType

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"

# The kinds the demo's files hold: kind -> where it is served.
RESOURCE_TYPES: dict[str, ResourceType] = {
    rt.kind: rt
    for rt in (
        ResourceType("", "v1", "namespaces", "Namespace", namespaced=False),
        ResourceType("", "v1", "secrets", "Secret", namespaced=True),
        ResourceType("batch", "v1", "jobs", "Job", namespaced=True),
        ResourceType("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False),
        ResourceType("kueue.x-k8s.io", "v1beta2", "resourceflavors", "ResourceFlavor", False),
        ResourceType("kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", False),
        ResourceType("kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue", True),
        ResourceType(
            "kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", "WorkloadPriorityClass", False
        ),
        ResourceType("kueue.x-k8s.io", "v1beta2", "topologies", "Topology", False),
        ResourceType("kueue.x-k8s.io", "v1beta2", "admissionchecks", "AdmissionCheck", False),
        ResourceType(
            "kueue.x-k8s.io",
            "v1beta2",
            "provisioningrequestconfigs",
            "ProvisioningRequestConfig",
            False,
        ),
        ResourceType("kueue.x-k8s.io", "v1beta2", "multikueueconfigs", "MultiKueueConfig", False),
        ResourceType("kueue.x-k8s.io", "v1beta2", "multikueueclusters", "MultiKueueCluster", False),
    )
}


def read_documents(path: Path) -> list[dict[str, Any]]:
    with path.open() as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc]


async def create(client: KubeClient, obj: dict[str, Any]) -> dict[str, Any]:
    """Create one object; an object that already exists is left as it is."""
    rt = RESOURCE_TYPES[obj["kind"]]
    namespace = obj.get("metadata", {}).get("namespace") or ("default" if rt.namespaced else None)
    try:
        return await client.request("POST", rt.collection_path(namespace), body=obj)
    except ApiError as error:
        if error.status == 409:
            return obj
        raise


async def apply_file(client: KubeClient, path: Path) -> int:
    documents = read_documents(path)
    for obj in documents:
        await create(client, obj)
    return len(documents)
