"""A stand-in for cluster-autoscaler's ProvisioningRequest support, for the tests.

It answers every ProvisioningRequest (`autoscaling.x-k8s.io/v1`) it sees as the real one
would, after its own fashion: `provision` adds one node per pod of the request (sized to the
pod's requests, tainted `nvidia.com/gpu:NoSchedule` when it asks for GPUs, KWOK-managed on a
real control plane) and sets Accepted and Provisioned; `fail` sets Failed with `FAIL_MESSAGE`.
What it answered stays in `answered`, by request name, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubesim.nodes import NodeShape, node_object
from kueue_api.pod_requests import pod_spec_requests
from kueue_api.quantity import Quantity
from mkq.realk8s.binaries import PROVISIONING_REQUEST_CRD, module_file
from mkq.realk8s.clusters import KWOK_ANNOTATION
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import NODES, POD_TEMPLATES, PROVISIONING_REQUESTS, ResourceType

Obj = dict[str, Any]

CRDS = ResourceType(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
FAIL_MESSAGE = "the stand-in autoscaler has no capacity of this class"
PROVISIONED_MESSAGE = "Provisioned by the stand-in autoscaler"
PROVISIONED_LABEL = "autoscaler.mkq.dev/provisioned-for"
GPU = "nvidia.com/gpu"


def provisioning_request_crd() -> Path:
    """The ProvisioningRequest CRD from cluster-autoscaler's API module (not a copy)."""
    return module_file(*PROVISIONING_REQUEST_CRD)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(kind: str, message: str) -> Obj:
    return {
        "type": kind,
        "status": "True",
        "reason": kind,
        "message": message,
        "lastTransitionTime": _now(),
    }


def _amounts(values: object, field: str) -> dict[str, int]:
    items = values.items() if isinstance(values, dict) else ()
    return {str(name): Quantity.parse(amount).milli_value() for name, amount in items}


def _pod_requests(template: Obj) -> dict[str, Quantity]:
    """What one pod of the template needs of a node (kueue_api.pod_requests)."""
    milli = pod_spec_requests(template.get("spec") or {}, _amounts)
    return {name: Quantity.from_milli(value) for name, value in milli.items()}


@dataclass
class StandInAutoscaler:
    client: KubeClient
    mode: str = "provision"  # or "fail"
    kwok: bool = False
    answered: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)

    async def _node(self, name: str, requests: dict[str, Quantity]) -> None:
        allocatable = {"cpu": "4", "memory": "16Gi", "pods": "110"}
        for resource, amount in requests.items():
            if resource not in ("cpu", "memory"):
                allocatable[resource] = str(amount)
        taints = (
            ({"key": GPU, "value": "present", "effect": "NoSchedule"},) if GPU in requests else ()
        )
        node = node_object(
            NodeShape(
                name=name,
                labels={PROVISIONED_LABEL: "true"},
                allocatable=allocatable,
                taints=taints,
            ),
            _now(),
        )
        if self.kwok:
            node["metadata"].setdefault("annotations", {})[KWOK_ANNOTATION] = "fake"
            node["status"] = {k: node["status"][k] for k in ("capacity", "allocatable")}
        await self.client.create(NODES, node)
        self.nodes.append(name)

    async def _answer(self, request: Obj) -> None:
        meta = request["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        conditions = [_condition("Accepted", "accepted by the stand-in autoscaler")]
        if self.mode == "fail":
            conditions.append(_condition("Failed", FAIL_MESSAGE))
        else:
            for index, pod_set in enumerate(request["spec"]["podSets"]):
                template = await self.client.get(
                    POD_TEMPLATES, pod_set["podTemplateRef"]["name"], namespace
                )
                requests = _pod_requests(template.get("template") or {})
                for pod in range(int(pod_set["count"])):
                    await self._node(f"{name}-{index}-{pod}", requests)
            conditions.append(_condition("Provisioned", PROVISIONED_MESSAGE))
        request["status"] = {**(request.get("status") or {}), "conditions": conditions}
        await self.client.replace(PROVISIONING_REQUESTS, request, "status")
        self.answered.append(name)

    async def run(self) -> None:
        while True:
            with contextlib.suppress(ApiError):
                items, _ = await self.client.list(PROVISIONING_REQUESTS)
                for request in items:
                    if request["metadata"]["name"] in self.answered:
                        continue
                    if (request.get("status") or {}).get("conditions"):
                        continue
                    await self._answer(request)
            await asyncio.sleep(0.1)

    async def remove_nodes(self) -> None:
        for name in self.nodes:
            with contextlib.suppress(ApiError):
                await self.client.delete(NODES, name)


@contextlib.asynccontextmanager
async def running(autoscaler: StandInAutoscaler) -> AsyncIterator[StandInAutoscaler]:
    task = asyncio.create_task(autoscaler.run(), name="stand-in-autoscaler")
    try:
        yield autoscaler
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await autoscaler.remove_nodes()
