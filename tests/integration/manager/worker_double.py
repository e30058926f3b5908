"""Plays a worker agent's part on a kubesim cluster, through kubernetes-asyncio only.

Lets the manager's tests admit, finish or evict a Workload copy exactly when they choose, which a
real agent would do on its own schedule.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import load_kube_config_from_dict

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
MERGE = "application/merge-patch+json"


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(kind: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message or reason,
        "lastTransitionTime": now_text(),
    }


class WorkerDouble:
    def __init__(self, name: str, api: client.ApiClient) -> None:
        self.name = name
        self.api = api
        self.custom = client.CustomObjectsApi(api)
        self.batch = client.BatchV1Api(api)
        self.core = client.CoreV1Api(api)

    @classmethod
    async def connect(cls, name: str, kubeconfig: dict[str, Any]) -> WorkerDouble:
        configuration = client.Configuration()
        await load_kube_config_from_dict(kubeconfig, client_configuration=configuration)
        return cls(name, client.ApiClient(configuration=configuration))

    async def close(self) -> None:
        await self.api.close()

    async def setup_queues(self, namespace: str = "default", queue: str = "user-queue") -> None:
        """A ResourceFlavor, ClusterQueue and LocalQueue, as a worker of MultiKueue has."""
        objects = [
            ("resourceflavors", None, {"metadata": {"name": "default"}, "spec": {}}),
            (
                "clusterqueues",
                None,
                {
                    "metadata": {"name": "cq"},
                    "spec": {
                        "namespaceSelector": {},
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu", "memory"],
                                "flavors": [
                                    {
                                        "name": "default",
                                        "resources": [
                                            {"name": "cpu", "nominalQuota": "100"},
                                            {"name": "memory", "nominalQuota": "100Gi"},
                                        ],
                                    }
                                ],
                            }
                        ],
                    },
                },
            ),
            (
                "localqueues",
                namespace,
                {
                    "metadata": {"name": queue, "namespace": namespace},
                    "spec": {"clusterQueue": "cq"},
                },
            ),
        ]
        for plural, ns, body in objects:
            body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": _kind(plural), **body}
            try:
                if ns is None:
                    await self.custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
                else:
                    await self.custom.create_namespaced_custom_object(
                        GROUP, VERSION, ns, plural, body
                    )
            except ApiException as error:
                if error.status != 409:
                    raise

    async def workloads(self, namespace: str = "default") -> list[dict[str, Any]]:
        result = await self.custom.list_namespaced_custom_object(
            GROUP, VERSION, namespace, "workloads"
        )
        return list(result["items"])

    async def jobs(self, namespace: str = "default") -> list[Any]:
        return list((await self.batch.list_namespaced_job(namespace)).items)

    async def _status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        await self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, "workloads", name, {"status": status}, _content_type=MERGE
        )

    async def admit(self, namespace: str, name: str) -> None:
        """What Kueue writes when it admits: quota reserved, checks Ready, the admission (one
        assignment per podSet, as the CRD's rule wants)."""
        current = await self.custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, "workloads", name
        )
        pod_sets = (current.get("spec") or {}).get("podSets") or [{"name": "main", "count": 1}]
        await self._status(
            namespace,
            name,
            {
                "admission": {
                    "clusterQueue": "cq",
                    "podSetAssignments": [
                        {"name": p["name"], "count": p["count"], "flavors": {"cpu": "default"}}
                        for p in pod_sets
                    ],
                },
                "conditions": [
                    condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in cq"),
                    condition("Admitted", "True", "Admitted", "The workload is admitted"),
                ],
            },
        )

    async def finish(self, namespace: str, name: str, reason: str = "Succeeded") -> None:
        current = await self.custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, "workloads", name
        )
        conditions = list((current.get("status") or {}).get("conditions") or [])
        conditions.append(condition("Finished", "True", reason, f"Job {reason.lower()}"))
        await self._status(namespace, name, {"conditions": conditions})

    async def evict(self, namespace: str, name: str) -> None:
        await self._status(
            namespace,
            name,
            {
                "admission": None,
                "conditions": [
                    condition("QuotaReserved", "False", "Pending", "evicted"),
                    condition("Admitted", "False", "NoReservation", "evicted"),
                    condition("Evicted", "True", "Preempted", "preempted by a higher priority one"),
                ],
            },
        )

    async def begin_eviction(self, namespace: str, name: str, reason: str) -> None:
        """Kueue's first step of an eviction (HoldAndDrain, preemption): Evicted=True while the
        copy still holds its quota and stays Admitted, until the worker has stopped the Job."""
        current = await self.custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, "workloads", name
        )
        conditions = list((current.get("status") or {}).get("conditions") or [])
        conditions.append(condition("Evicted", "True", reason, f"evicted: {reason}"))
        await self._status(namespace, name, {"conditions": conditions})

    async def set_finalizers(self, namespace: str, name: str, finalizers: list[str]) -> None:
        """A worker's Kueue holds a Workload by its resource-in-use finalizer while it uses
        quota; a delete then only marks it (deletionTimestamp) until the finalizer goes."""
        await self.custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            "workloads",
            name,
            {"metadata": {"finalizers": finalizers}},
            _content_type=MERGE,
        )

    async def complete_job(self, namespace: str, name: str) -> None:
        await self.batch.patch_namespaced_job_status(
            name,
            namespace,
            {
                "status": {
                    "startTime": now_text(),
                    "completionTime": now_text(),
                    "succeeded": 1,
                    "conditions": [
                        {
                            "type": "SuccessCriteriaMet",
                            "status": "True",
                            "lastTransitionTime": now_text(),
                        },
                        {"type": "Complete", "status": "True", "lastTransitionTime": now_text()},
                    ],
                }
            },
        )

    async def delete_job(self, namespace: str, name: str) -> None:
        await self.batch.delete_namespaced_job(name, namespace, propagation_policy="Background")

    async def delete_workload(self, namespace: str, name: str) -> None:
        await self.custom.delete_namespaced_custom_object(
            GROUP, VERSION, namespace, "workloads", name
        )


def _kind(plural: str) -> str:
    return {
        "resourceflavors": "ResourceFlavor",
        "clusterqueues": "ClusterQueue",
        "localqueues": "LocalQueue",
    }[plural]
