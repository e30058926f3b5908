"""The demo's Jobs: two teams, CPU and GPU, rack-constrained, two priorities, two ways in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from kubesim import RUN_FOR

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
RACK_LEVEL = "cloud.provider.com/topology-rack"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"

Route = Literal["manager-cluster", "rest"]


@dataclass(frozen=True)
class DemoJob:
    namespace: str
    name: str
    route: Route
    kind: str  # cpu, gpu or rack: what the Job asks for, for the summary
    manifest: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def job_manifest(
    namespace: str,
    name: str,
    *,
    pods: int,
    requests: dict[str, str],
    run_for: str,
    priority: str,
    route: Route,
    rack: bool = False,
) -> dict[str, Any]:
    pod_annotations = {RUN_FOR: run_for}
    if rack:
        pod_annotations[REQUIRED_TOPOLOGY] = RACK_LEVEL
    spec: dict[str, Any] = {
        "parallelism": pods,
        "completions": pods,
        "suspend": True,
        "template": {
            "metadata": {"annotations": pod_annotations},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                        "args": ["entrypoint-tester", "hello", "world"],
                        "resources": {"requests": requests, "limits": requests},
                    }
                ],
            },
        },
    }
    if route == "manager-cluster":
        # What Kueue's webhook does to a Job queued for MultiKueue: the manager's copy stays
        # suspended and belongs to the MultiKueue controller, so the cluster's own Job
        # controller leaves it alone.
        spec["managedBy"] = MULTIKUEUE
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: "user-queue", PRIORITY_LABEL: priority},
        },
        "spec": spec,
    }


def workload_mix(count: int = 24) -> list[DemoJob]:
    """`count` Jobs, alternating teams and routes; every fourth asks for a GPU, every sixth
    for four pods on one rack, the rest for 1-3 CPU pods."""
    jobs: list[DemoJob] = []
    for i in range(count):
        namespace = "team-a" if i % 2 == 0 else "team-b"
        route: Route = "manager-cluster" if i % 4 < 2 else "rest"
        priority = "high" if i % 3 == 0 else "low"
        run_for = f"{1 + i % 3}s"
        if i % 6 == 5:
            kind, pods, requests, rack = "rack", 4, {"cpu": "1", "memory": "1Gi"}, True
        elif i % 4 == 3:
            kind, pods, requests, rack = "gpu", 1, {"cpu": "2", "nvidia.com/gpu": "1"}, False
        else:
            kind, pods, requests, rack = "cpu", 1 + i % 3, {"cpu": "2", "memory": "2Gi"}, False
        name = f"{kind}-job-{i:02d}"
        manifest = job_manifest(
            namespace,
            name,
            pods=pods,
            requests=requests,
            run_for=run_for,
            priority=priority,
            route=route,
            rack=rack,
        )
        jobs.append(DemoJob(namespace, name, route, kind, manifest))
    return jobs
