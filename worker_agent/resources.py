"""The Kubernetes resource types the agent reads and writes, addressed generically by REST path.

The agent treats every object as plain Kubernetes JSON, so one informer and one client serve
core kinds, batch Jobs and Kueue's CRDs alike; typed models appear only at the engine's door.
"""

from __future__ import annotations

from kueue_api.api_resources import KUEUE_GROUP, KUEUE_VERSION
from kueue_api.api_resources import ResourceType as ResourceType
from kueue_api.jobs import BATCH_JOB, JOBSET


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


# The job kinds' resources, named as the agent's RBAC and informers name them.
JOBS = BATCH_JOB.resource
JOBSETS = JOBSET.resource
