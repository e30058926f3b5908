"""A pass over many new manager-cluster jobs reads each priority class once (MemoReader),
and prices every job as reading the cluster for each would."""

from __future__ import annotations

import asyncio
from typing import Any

from kueue_api.priority import POD_PRIORITY_CLASS, WORKLOAD_PRIORITY_CLASS, Priority
from kueue_api.priority import PriorityClassRef as Ref
from manager.jobs import parse_job
from manager.priority import MemoReader, job_priority


class CountingReader:
    """A cluster with WorkloadPriorityClass `high` and PriorityClasses `pods` and the global
    default `base`; counts every read."""

    def __init__(self) -> None:
        self.reads = 0

    async def read_custom(
        self, plural: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        self.reads += 1
        return {"metadata": {"name": name}, "value": 1000} if name == "high" else None

    async def read_priority_class(self, name: str) -> dict[str, Any] | None:
        self.reads += 1
        return next((c for c in self._classes() if c["metadata"]["name"] == name), None)

    async def list_priority_classes(self) -> list[dict[str, Any]]:
        self.reads += 1
        return self._classes()

    @staticmethod
    def _classes() -> list[dict[str, Any]]:
        return [
            {"metadata": {"name": "pods"}, "value": 50},
            {"metadata": {"name": "base"}, "value": 5, "globalDefault": True},
        ]


def job(name: str, *, label: str | None = None, pod_class: str | None = None) -> Any:
    labels = {"kueue.x-k8s.io/queue-name": "q"}
    if label:
        labels["kueue.x-k8s.io/priority-class"] = label
    pod_spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if pod_class:
        pod_spec["priorityClassName"] = pod_class
    return parse_job(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "ns", "labels": labels},
            "spec": {"template": {"spec": pod_spec}},
        }
    )


def test_many_jobs_priced_in_one_pass_read_each_class_once() -> None:
    jobs = [job(f"plain-{i}") for i in range(100)]
    jobs += [job(f"high-{i}", label="high") for i in range(100)]
    jobs += [job(f"pods-{i}", pod_class="pods") for i in range(100)]

    async def price(memo: bool) -> tuple[list[Any], int]:
        cluster = CountingReader()
        reader = MemoReader(cluster) if memo else cluster
        found = [await job_priority(j, reader) for j in jobs]
        return found, cluster.reads

    each, reads_each = asyncio.run(price(memo=False))
    once, reads_once = asyncio.run(price(memo=True))
    assert once == each
    assert set(map(repr, once)) == {
        repr(Priority(Ref(POD_PRIORITY_CLASS, "base"), 5)),
        repr(Priority(Ref(WORKLOAD_PRIORITY_CLASS, "high"), 1000)),
        repr(Priority(Ref(POD_PRIORITY_CLASS, "pods"), 50)),
    }
    assert reads_each == 600  # `default` and one more per job: 2 x 300
    assert reads_once == 4  # `default`, `high`, the list and `pods`
