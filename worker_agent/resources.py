"""The Kubernetes resource types the agent reads and writes, addressed generically by REST path.

The agent treats every object as plain Kubernetes JSON, so one informer and one client serve
core kinds, batch Jobs and Kueue's CRDs alike; typed models appear only at the engine's door.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"


@dataclass(frozen=True)
class ResourceType:
    """One API resource: its group/version, plural name, kind and scope."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def _prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection_path(self, namespace: str | None = None) -> str:
        """The list/create path: all namespaces when `namespace` is None."""
        if self.namespaced and namespace:
            return f"{self._prefix()}/namespaces/{quote(namespace)}/{self.plural}"
        return f"{self._prefix()}/{self.plural}"

    def object_path(
        self, name: str, namespace: str | None = None, subresource: str | None = None
    ) -> str:
        path = f"{self.collection_path(namespace if self.namespaced else None)}/{quote(name)}"
        return f"{path}/{subresource}" if subresource else path

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _kueue(plural: str, kind: str, namespaced: bool) -> ResourceType:
    return ResourceType(KUEUE_GROUP, KUEUE_VERSION, plural, kind, namespaced)


RESOURCE_FLAVORS = _kueue("resourceflavors", "ResourceFlavor", False)
CLUSTER_QUEUES = _kueue("clusterqueues", "ClusterQueue", False)
COHORTS = _kueue("cohorts", "Cohort", False)
LOCAL_QUEUES = _kueue("localqueues", "LocalQueue", True)
WORKLOADS = _kueue("workloads", "Workload", True)
WORKLOAD_PRIORITY_CLASSES = _kueue("workloadpriorityclasses", "WorkloadPriorityClass", False)
TOPOLOGIES = _kueue("topologies", "Topology", False)
ADMISSION_CHECKS = _kueue("admissionchecks", "AdmissionCheck", False)
PROVISIONING_REQUEST_CONFIGS = _kueue(
    "provisioningrequestconfigs", "ProvisioningRequestConfig", False
)

NAMESPACES = ResourceType("", "v1", "namespaces", "Namespace", False)
NODES = ResourceType("", "v1", "nodes", "Node", False)
PODS = ResourceType("", "v1", "pods", "Pod", True)
EVENTS = ResourceType("", "v1", "events", "Event", True)
JOBS = ResourceType("batch", "v1", "jobs", "Job", True)
JOBSETS = ResourceType("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", True)
LEASES = ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True)
POD_TEMPLATES = ResourceType("", "v1", "podtemplates", "PodTemplate", True)
# The pods' priority classes, which give a Workload its priority when no WorkloadPriorityClass
# does (kueue_api.priority).
PRIORITY_CLASSES = ResourceType(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False
)
# cluster-autoscaler's API, which Kueue's ProvisioningRequest admission check writes.
PROVISIONING_REQUESTS = ResourceType(
    "autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest", True
)

# Dynamic Resource Allocation: what device quotas are computed from (spec §10).
DEVICE_CLASSES = ResourceType("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False)
RESOURCE_SLICES = ResourceType("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False)
RESOURCE_CLAIM_TEMPLATES = ResourceType(
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True
)
RESOURCE_CLAIMS = ResourceType("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True)
