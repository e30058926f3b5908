"""What one pod requests, as Kubernetes counts it: the one rule the engine, the manager, kubesim's
scheduler and the tests' stand-in autoscaler all use.

Kubernetes' PodRequests (k8s.io/component-helpers/resource/helpers.go), which kube-scheduler
fits on nodes and Kueue counts against quota (pkg/workload/resources.go, through
resourcehelpers.PodRequests):

- the app containers add up;
- an init container runs alone, before the app containers, beside the sidecars started before
  it; a sidecar (an init container with ``restartPolicy: Always``) keeps running, so it adds to
  the app containers and to every init container after it; the pod needs the largest of those
  moments;
- pod-level ``resources`` (PodLevelResources) replace the containers' sum for the resources
  that may be set there (cpu, memory, hugepages);
- the RuntimeClass's ``overhead`` comes on top.

A limit without a request stands for the request: the API server defaults it so, for a
container and at pod level, and Kueue reads a submitted object the same way before any
defaulting (pkg/util/limitrange, AdjustResources).

Amounts are in thousandths (``Quantity.milli_value``), exact enough for every resource; callers
convert to their own units at the end, as Kueue takes ``Value()`` of the total.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Milli = dict[str, int]

# k8s.io/component-helpers/resource/helpers.go, IsSupportedPodLevelResource.
_POD_LEVEL = frozenset({"cpu", "memory"})
_POD_LEVEL_PREFIX = "hugepages-"


def requests_or_limits(requests: Mapping[str, int], limits: Mapping[str, int]) -> Milli:
    """A container's (or a pod's) requests, with each limit standing in for a missing request."""
    out = dict(limits)
    out.update(requests)
    return out


@dataclass(frozen=True)
class InitContainer:
    requests: Mapping[str, int]
    sidecar: bool = False  # restartPolicy: Always


def supported_at_pod_level(resource: str) -> bool:
    return resource in _POD_LEVEL or resource.startswith(_POD_LEVEL_PREFIX)


def pod_requests(
    containers: Iterable[Mapping[str, int]],
    init_containers: Iterable[InitContainer] = (),
    pod_level: Mapping[str, int] | None = None,
    overhead: Mapping[str, int] | None = None,
) -> Milli:
    """The pod's requests from its containers' (each already `requests_or_limits`)."""
    total: Milli = {}
    for requests in containers:
        for name, value in requests.items():
            total[name] = total.get(name, 0) + value
    sidecars: Milli = {}
    peak: Milli = {}
    for container in init_containers:
        if container.sidecar:
            for name, value in container.requests.items():
                total[name] = total.get(name, 0) + value
                sidecars[name] = sidecars.get(name, 0) + value
            moment = dict(sidecars)
        else:
            moment = dict(container.requests)
            for name, value in sidecars.items():
                moment[name] = moment.get(name, 0) + value
        for name, value in moment.items():
            peak[name] = max(peak.get(name, 0), value)
    for name, value in peak.items():
        total[name] = max(total.get(name, 0), value)
    for name, value in (pod_level or {}).items():
        if supported_at_pod_level(name):
            total[name] = value
    for name, value in (overhead or {}).items():
        total[name] = total.get(name, 0) + value
    return total


ReadAmounts = Callable[[object, str], Mapping[str, int]]


def pod_spec_requests(spec: Mapping[str, Any], read: ReadAmounts, at: str = "spec") -> Milli:
    """`pod_requests` of a pod spec as JSON. `read(value, field)` turns one resource list (None
    when absent) into thousandths, and decides what a malformed one is: kubesim's scheduler
    skips it, the manager refuses the manifest naming `field`."""

    def container(entry: object, field: str) -> Milli:
        if not isinstance(entry, Mapping):
            return {}
        resources = entry.get("resources")
        if not isinstance(resources, Mapping):
            resources = {}
        return requests_or_limits(
            read(resources.get("requests"), f"{field}.resources.requests"),
            read(resources.get("limits"), f"{field}.resources.limits"),
        )

    containers = [
        container(c, f"{at}.containers[{i}]") for i, c in enumerate(spec.get("containers") or ())
    ]
    init_containers = [
        InitContainer(
            container(c, f"{at}.initContainers[{i}]"),
            sidecar=isinstance(c, Mapping) and c.get("restartPolicy") == "Always",
        )
        for i, c in enumerate(spec.get("initContainers") or ())
    ]
    pod_level = container(spec, at) if isinstance(spec.get("resources"), Mapping) else None
    overhead = read(spec.get("overhead"), f"{at}.overhead")
    return pod_requests(containers, init_containers, pod_level or None, overhead)
