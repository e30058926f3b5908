"""ManagerClusterSource._sync_checks: each MultiKueue check's Active condition as Kueue writes
it, and the cluster order per queue handed to the dispatcher."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from manager.sources import manager_cluster
from manager.sources.manager_cluster import ManagerClusterSource, _Topology

REF = {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig"}


def _named(name: str, **rest: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "generation": 1}, **rest}


def _check(name: str, config: str, condition: dict[str, str] | None = None) -> dict[str, Any]:
    status = {"conditions": [{"type": "Active", **condition}]} if condition else {}
    return _named(
        name,
        spec={"controllerName": "kueue.x-k8s.io/multikueue", "parameters": {**REF, "name": config}},
        status=status,
    )


class _Source:
    """The source with its caches and dispatcher stubbed, recording the conditions it writes."""

    def __init__(self, configs: dict[str, list[str]], clusters: list[str], ready: set[str]):
        self.dispatcher = SimpleNamespace(
            ready_connections=lambda: {name: object() for name in ready}, cluster_order={}
        )
        caches = {
            "multikueueconfigs": {
                (None, name): _named(name, spec={"clusters": names})
                for name, names in configs.items()
            },
            "multikueueclusters": {(None, name): _named(name) for name in clusters},
        }
        self.source = ManagerClusterSource.__new__(ManagerClusterSource)
        self.source._runtime = SimpleNamespace(dispatcher=self.dispatcher)  # type: ignore[assignment]
        self.source._connection = SimpleNamespace(caches=caches)  # type: ignore[assignment]
        self.written: list[tuple[str, bool, str, str, bool]] = []

        async def record(
            obj: dict[str, Any], active: bool, reason: str, message: str, plural: str = ""
        ) -> None:
            stored = bool((obj.get("status") or {}).get("conditions"))
            self.written.append((obj["metadata"]["name"], active, reason, message, stored))

        self.source._set_active = record  # type: ignore[method-assign,assignment]

    def sync(self, topology: _Topology) -> None:
        asyncio.run(self.source._sync_checks(topology))


def test_each_check_gets_kueues_reason_and_message_naming_the_clusters() -> None:
    configs = {"mk": ["w1", "w2", "w3"], "unused": ["w9"]}
    stub = _Source(configs, clusters=["w1", "w2", "w9"], ready={"w2"})
    topology = _Topology(
        checks={
            "mk-check": _check("mk-check", "mk"),
            "unused-check": _check("unused-check", "unused"),
            "gone-check": _check("gone-check", "gone"),
        },
        configs={"mk": configs["mk"]},
    )
    stub.sync(topology)
    assert stub.written == [
        (
            "mk-check",
            True,
            "SomeActiveClusters",
            "Missing clusters: [w3], Inactive clusters: [w1]",
            False,
        ),
        # Used by no ClusterQueue, so not in the topology: still reported, as Kueue does.
        ("unused-check", False, "NoUsableClusters", "Inactive clusters: [w9]", False),
        (
            "gone-check",
            False,
            "BadConfig",
            "Cannot load the AdmissionChecks parameters: "
            'multikueueconfigs.kueue.x-k8s.io "gone" not found',
            False,
        ),
    ]


class _Patches:
    """CustomObjectsApi.patch_cluster_custom_object_status, recorded."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def patch_cluster_custom_object_status(self, *args: Any, **kwargs: Any) -> None:
        self.bodies.append(args[4])


def _set_active(stored: dict[str, str] | None, active: bool, reason: str, message: str) -> Any:
    """What ManagerClusterSource._set_active writes for a check holding `stored`."""
    patches = _Patches()
    source = ManagerClusterSource.__new__(ManagerClusterSource)
    now = SimpleNamespace(now=lambda: datetime(2026, 1, 2, tzinfo=UTC))
    source._runtime = SimpleNamespace(clock=now)  # type: ignore[assignment]
    source._connection = SimpleNamespace(api_client=object())  # type: ignore[assignment]
    check = _check("c", "mk", stored)
    original = manager_cluster.client.CustomObjectsApi
    manager_cluster.client.CustomObjectsApi = lambda api: patches  # type: ignore[assignment,misc]
    try:
        asyncio.run(source._set_active(check, active, reason, message, "admissionchecks"))
    finally:
        manager_cluster.client.CustomObjectsApi = original  # type: ignore[misc]
    return [body["status"]["conditions"][0] for body in patches.bodies]


def test_a_changed_message_with_the_same_reason_is_written_keeping_its_transition_time() -> None:
    stored = {
        "status": "True",
        "reason": "SomeActiveClusters",
        "message": "Inactive clusters: [w2]",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    (written,) = _set_active(stored, True, "SomeActiveClusters", "Inactive clusters: [w1]")
    assert written["message"] == "Inactive clusters: [w1]"
    assert written["lastTransitionTime"] == "2026-01-01T00:00:00Z"  # status did not change
    (flipped,) = _set_active(stored, False, "NoUsableClusters", "Inactive clusters: [w1 w2]")
    assert flipped["lastTransitionTime"] == "2026-01-02T00:00:00Z"


def test_an_unchanged_condition_is_not_written_again() -> None:
    stored = {"status": "True", "reason": "Active", "message": "The admission check is active"}
    assert _set_active(stored, True, "Active", "The admission check is active") == []


def test_the_dispatcher_gets_each_queues_cluster_order_from_its_config() -> None:
    stub = _Source({"a": ["w3", "w1"], "b": ["w2"]}, clusters=["w1", "w2", "w3"], ready=set())
    topology = _Topology(
        queue_to_config={("team-a", "lq"): "a", ("team-b", "lq"): "b", ("team-c", "lq"): "x"},
        configs={"a": ["w3", "w1"], "b": ["w2"]},
    )
    stub.sync(topology)
    assert stub.dispatcher.cluster_order == {
        ("team-a", "lq"): ("w3", "w1"),
        ("team-b", "lq"): ("w2",),
        ("team-c", "lq"): (),  # its config is missing: no order, so by name
    }
