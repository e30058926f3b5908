"""LeaderWorkerSet's own controller (from its Go module, mkq/realk8s/lws.py) on a real
kube-apiserver, with no Kueue agent: Kueue's sample LeaderWorkerSet
(serving-workloads/sample-leaderworkerset.yaml, 2 groups of a leader and 2 workers) created
unmodified with kubectl is defaulted by LWS's webhook, and LWS makes its leader StatefulSet,
a worker StatefulSet per leader and the 6 pods (KWOK plays them), labelled by LWS's pod webhook
with their group (and workers with their worker index).

This proves the peer itself works as its release installs it, before anything of Kueue's is
held to it (tests/integration/agent/ does that). kubesim emulates no LWS, so this runs on the
real control plane only (`real_clusters`, group `lws`)."""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mkq.realk8s.clusters import RealCluster, kubectl
from tests.one_cluster import EXAMPLES

pytestmark = [pytest.mark.kubectl, pytest.mark.timeout(300)]

SAMPLE = EXAMPLES / "serving-workloads" / "sample-leaderworkerset.yaml"
NAME = "nginx-leaderworkerset"  # the sample's
REPLICAS, SIZE = 2, 3  # the sample's groups, and pods a group (a leader and its workers)
LWS = "leaderworkerset.sigs.k8s.io"
NAME_LABEL = f"{LWS}/name"
GROUP_INDEX = f"{LWS}/group-index"
WORKER_INDEX = f"{LWS}/worker-index"
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RealCluster]:
    """The session's real cluster `lws` with LWS's CRD, webhooks and controller for the
    module; what a test made there is deleted before the controller stops (its webhooks go
    with it)."""
    from mkq.realk8s.lws import lws_controller
    from tests.realk8s import real_clusters

    real = real_clusters(("lws",))["lws"]
    with tempfile.TemporaryDirectory() as scratch, lws_controller(real, Path(scratch)):
        try:
            yield real
        finally:
            kubectl(real, "delete", "leaderworkersets", "--all", "--namespace=default", "--wait")


def listed(cluster: RealCluster, kind: str, selector: str) -> list[Obj]:
    out = kubectl(cluster, "get", kind, "--namespace=default", f"--selector={selector}", "-o=json")
    items: list[Obj] = json.loads(out)["items"]
    return items


def eventually(check: Callable[[], Any], within: float = 90.0, what: str = "") -> Any:
    deadline = time.monotonic() + within
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within}s: {what}; last: {value!r}")
        time.sleep(0.5)


def test_kueues_sample_leaderworkerset_gets_its_statefulsets_and_labelled_pods(
    cluster: RealCluster,
) -> None:
    created: Obj = json.loads(kubectl(cluster, "create", f"--filename={SAMPLE}", "-o=json"))
    assert created["metadata"]["name"] == NAME
    spec = created["spec"]
    # LWS's defaulting webhook (pkg/webhooks/leaderworkerset_webhook.go): the CRD's defaults
    # reach neither field, since the sample has no networkConfig or rolloutStrategy at all.
    assert spec["networkConfig"] == {"subdomainPolicy": "Shared"}, spec
    assert spec["rolloutStrategy"]["rollingUpdateConfiguration"]["maxSurge"] == 0, spec

    def statefulsets() -> list[Obj] | None:
        found = listed(cluster, "statefulsets", f"{NAME_LABEL}={NAME}")
        return found if len(found) == 1 + REPLICAS else None

    made = eventually(statefulsets, what="the leader StatefulSet and one per group's workers")
    by_name = {s["metadata"]["name"]: s for s in made}
    leader = by_name[NAME]  # the leader StatefulSet is named after the LWS, and owned by it
    assert [(o["kind"], o["name"]) for o in leader["metadata"]["ownerReferences"]] == [
        ("LeaderWorkerSet", NAME)
    ]
    assert leader["spec"]["replicas"] == REPLICAS
    # Each group's workers: a StatefulSet named after (and owned by) the group's leader pod.
    for group in range(REPLICAS):
        workers = by_name[f"{NAME}-{group}"]
        assert workers["spec"]["replicas"] == SIZE - 1
        assert [o["kind"] for o in workers["metadata"]["ownerReferences"]] == ["Pod"]

    def pods() -> list[Obj] | None:
        found = listed(cluster, "pods", f"{NAME_LABEL}={NAME}")
        running = [p for p in found if p.get("status", {}).get("phase") == "Running"]
        return found if len(running) == REPLICAS * SIZE else None

    found = eventually(pods, what=f"{REPLICAS * SIZE} pods of the LWS running")
    labels = {p["metadata"]["name"]: p["metadata"]["labels"] for p in found}
    # Every pod carries its group; each group is its leader (NAME-g) and workers (NAME-g-1..).
    assert Counter(label[GROUP_INDEX] for label in labels.values()) == {
        str(group): SIZE for group in range(REPLICAS)
    }, labels
    for group in range(REPLICAS):
        assert labels[f"{NAME}-{group}"][GROUP_INDEX] == str(group), labels
        for worker in range(1, SIZE):
            assert labels[f"{NAME}-{group}-{worker}"][GROUP_INDEX] == str(group), labels
            assert labels[f"{NAME}-{group}-{worker}"][WORKER_INDEX] == str(worker), labels
