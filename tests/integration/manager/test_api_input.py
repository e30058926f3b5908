"""REST API edges: bearer auth, bad input as clear 4xx bodies, nothing half-written."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import httpx
from cryptography.fernet import Fernet

from kubesim.ports import free_port
from manager.db import clusters as cluster_queries
from manager.db.credentials import TokenHasher
from manager.settings import ManagerSettings
from tests.integration.manager.harness import eventually, serve_manager
from tests.one_cluster import EXAMPLES, documents

JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {
        "name": "sample",
        "namespace": "default",
        "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
    },
    "spec": {
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                ],
            }
        }
    },
}


def kubeconfig_for(port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }


def job(name: str = "sample") -> dict[str, Any]:
    body = copy.deepcopy(JOB)
    body["metadata"]["name"] = name
    return body


async def test_requests_without_the_bearer_token_are_refused(settings: ManagerSettings) -> None:
    async with serve_manager(settings) as manager, httpx.AsyncClient(base_url=manager.url) as anon:
        response = await anon.get("/api/v1/workloads")
        assert response.status_code == 401
        assert response.json()["error"]["reason"] == "Unauthorized"
        wrong = await anon.get("/api/v1/clusters", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert (await anon.get("/healthz")).status_code == 200
        assert (await anon.get("/readyz")).status_code == 200
        spec = (await anon.get("/openapi.json")).json()
        assert "/api/v1/workloads/{namespace}/{name}" in spec["paths"]
        assert "AgentReport" in spec["components"]["schemas"]


async def test_a_malformed_manifest_is_a_422_naming_the_field(settings: ManagerSettings) -> None:
    async with serve_manager(settings) as manager:
        broken = job()
        broken["metadata"]["labels"] = {}
        response = await manager.client.post("/api/v1/workloads", json=broken)
        assert response.status_code == 422
        error = response.json()["error"]
        assert error["field"] == "metadata.labels[kueue.x-k8s.io/queue-name]"
        assert "queue-name" in error["message"]
        not_json = await manager.client.post(
            "/api/v1/workloads", content=b"{nope", headers={"content-type": "application/json"}
        )
        assert not_json.status_code == 400
        listing = await manager.client.get("/api/v1/workloads")
        assert listing.json() == {"items": [], "continue": None}


async def test_kueues_serving_samples_a_deployment_is_a_422_naming_what_to_do(
    settings: ManagerSettings,
) -> None:
    """Kueue's MultiKueue has no adapter for a Deployment: it is refused, with where to apply
    it instead. A StatefulSet and a LeaderWorkerSet are dispatched (tests/e2e/
    test_statefulset.py, test_leaderworkerset.py); the latter's record names the Workload of
    its group 0, the one raced, and a set of no groups has none to race."""
    async with serve_manager(settings) as manager:
        (body,) = documents(EXAMPLES / "serving-workloads" / "sample-deployment.yaml")
        response = await manager.client.post("/api/v1/workloads", json=body)
        assert response.status_code == 422
        error = response.json()["error"]
        assert error["field"] == "kind"
        assert error["message"].startswith("kind: apps/v1 Deployment: Kueue's MultiKueue")
        assert "apply it, with its queue-name label, to a worker cluster" in error["message"]

        (lws,) = documents(EXAMPLES / "serving-workloads" / "sample-leaderworkerset.yaml")
        empty = copy.deepcopy(lws)
        empty["spec"]["replicas"] = 0
        response = await manager.client.post("/api/v1/workloads", json=empty)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["field"] == "spec.replicas"
        listing = await manager.client.get("/api/v1/workloads")
        assert listing.json() == {"items": [], "continue": None}

        response = await manager.client.post("/api/v1/workloads", json=lws)
        assert response.status_code == 201, response.text
        created = response.json()
        assert created["kind"] == "LeaderWorkerSet"
        # Group 0's: GetWorkloadName(uid, "<set>-0"), the set's kind and group in the hash.
        assert created["workloadName"].startswith("leaderworkerset-nginx-leaderworkerset-0-")


async def test_a_bad_kubeconfig_is_refused_and_nothing_is_stored(
    settings: ManagerSettings,
) -> None:
    async with serve_manager(settings) as manager:
        response = await manager.client.post(
            "/api/v1/clusters", json={"name": "w1", "kubeconfig": "clusters: [oops"}
        )
        assert response.status_code == 422
        assert response.json()["error"]["reason"] == "InvalidKubeconfig"
        assert response.json()["error"]["field"] == "kubeconfig"
        assert (await manager.client.get("/api/v1/clusters")).json()["items"] == []
        bad_name = await manager.client.post(
            "/api/v1/clusters", json={"name": "Not_A_Name", "kubeconfig": kubeconfig_for(1)}
        )
        assert bad_name.status_code == 422
        assert bad_name.json()["error"]["field"] == "name"


async def test_a_duplicate_cluster_name_is_a_409(settings: ManagerSettings) -> None:
    async with serve_manager(settings) as manager:
        token = await manager.register("w1", kubeconfig_for(free_port()))
        assert len(token) > 20
        again = await manager.client.post(
            "/api/v1/clusters", json={"name": "w1", "kubeconfig": kubeconfig_for(free_port())}
        )
        assert again.status_code == 409
        assert again.json()["error"] == {
            "reason": "AlreadyExists",
            "message": "cluster 'w1' already exists",
            "field": "name",
        }
        assert len((await manager.client.get("/api/v1/clusters")).json()["items"]) == 1


async def test_an_unreachable_cluster_shows_why(settings: ManagerSettings) -> None:
    async with serve_manager(settings) as manager:
        await manager.register("w1", kubeconfig_for(free_port()))

        async def unreachable() -> dict[str, Any] | None:
            body = (await manager.client.get("/api/v1/clusters/w1")).json()
            return body if body["state"] == "Unreachable" else None

        body = await eventually(unreachable)
        assert body["reason"] == "ClientConnectionFailed"
        assert body["unreachableSince"] is not None
        missing = await manager.client.get("/api/v1/clusters/nope")
        assert missing.status_code == 404


async def test_workloads_page_and_filter(settings: ManagerSettings) -> None:
    async with serve_manager(settings) as manager:
        for index in range(5):
            created = await manager.client.post("/api/v1/workloads", json=job(f"job-{index}"))
            assert created.status_code == 201, created.text
            assert created.json()["state"] == "Pending"
        duplicate = await manager.client.post("/api/v1/workloads", json=job("job-0"))
        assert duplicate.status_code == 409
        names: list[str] = []
        token = None
        while True:
            params: dict[str, Any] = {"limit": 2}
            if token:
                params["continue"] = token
            page = (await manager.client.get("/api/v1/workloads", params=params)).json()
            names += [item["name"] for item in page["items"]]
            token = page["continue"]
            if token is None:
                break
        assert names == [f"job-{i}" for i in range(5)]
        pending = await manager.client.get("/api/v1/workloads", params={"state": "Pending"})
        assert len(pending.json()["items"]) == 5
        other = await manager.client.get("/api/v1/workloads", params={"queue": "other"})
        assert other.json()["items"] == []
        bad = await manager.client.get("/api/v1/workloads", params={"state": "Sleeping"})
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "state"
        queues = (await manager.client.get("/api/v1/queues")).json()["items"]
        assert queues[0]["pending"] == 5
        assert [w["position"] for w in queues[0]["workloads"]] == [0, 1, 2, 3, 4]
        cancelled = await manager.client.delete("/api/v1/workloads/default/job-3")
        assert cancelled.status_code == 200

        async def is_cancelled() -> bool:
            return (await manager.workload("default", "job-3"))["state"] == "Cancelled"

        await eventually(is_cancelled)
        metrics = await manager.client.get("/metrics")
        assert "kueue_pending_workloads" in metrics.text


async def test_agent_reports_need_their_cluster_token_and_are_idempotent(
    settings: ManagerSettings,
) -> None:
    async with serve_manager(settings) as manager:
        token = await manager.register("w1", kubeconfig_for(free_port()))
        report = {
            "reportId": "r-1",
            "sentAt": "2026-01-01T00:00:00Z",
            "admissions": [],
            "finishes": [],
            "evictions": [],
            "capacity": [
                {
                    "clusterQueue": "cq",
                    "flavor": "default",
                    "resource": "cpu",
                    "nominal": "10",
                    "usage": "2",
                    "pending": 1,
                }
            ],
        }
        url = "/api/v1/clusters/w1/reports"
        assert (await manager.client.post(url, json=report)).status_code == 401
        agent = {"Authorization": f"Bearer {token}"}
        first = await manager.client.post(url, json=report, headers=agent)
        assert first.json() == {"accepted": True, "duplicate": False}
        second = await manager.client.post(url, json=report, headers=agent)
        assert second.json() == {"accepted": True, "duplicate": True}
        cluster = (await manager.client.get("/api/v1/clusters/w1")).json()
        assert cluster["capacity"][0]["nominal"] == "10"
        assert cluster["lastContact"] is not None
        broken = await manager.client.post(url, json={"reportId": ""}, headers=agent)
        assert broken.status_code == 422
        rotated = await manager.client.post("/api/v1/clusters/w1/token")
        assert rotated.status_code == 200
        report["reportId"] = "r-2"
        old = await manager.client.post(url, json=report, headers=agent)
        assert old.status_code == 401
        new = {"Authorization": f"Bearer {rotated.json()['token']}"}
        assert (await manager.client.post(url, json=report, headers=new)).status_code == 200


async def test_agent_tokens_are_stored_keyed_and_plain_digests_are_upgraded(
    settings: ManagerSettings,
) -> None:
    async with serve_manager(settings) as manager:
        token = await manager.register("w1", kubeconfig_for(free_port()))
        plain = hashlib.sha256(token.encode()).hexdigest()

        async def stored() -> str:
            async with manager.runtime.sessions() as session:
                row = await cluster_queries.get_cluster(session, "w1")
                assert row is not None
                return row.token_digest

        digest = await stored()
        assert digest.startswith("hmac-sha256:") and plain not in digest
        # Another server secret: the same token gives another digest (the key is not in the
        # database, so a dump of it checks no token).
        other = TokenHasher(Fernet.generate_key().decode())
        assert not other.matches(token, digest)
        # A cluster registered before keyed digests: its plain one matches, once, and is
        # replaced by the keyed one.
        async with manager.runtime.sessions.begin() as session:
            row = await cluster_queries.get_cluster(session, "w1")
            assert row is not None
            row.token_digest = plain
        report = {"reportId": "r-1", "sentAt": "2026-01-01T00:00:00Z"}
        agent = {"Authorization": f"Bearer {token}"}
        response = await manager.client.post(
            "/api/v1/clusters/w1/reports", json=report, headers=agent
        )
        assert response.status_code == 200, response.text
        assert await stored() == digest


async def test_metrics_need_the_api_or_the_metrics_token_unless_made_public(
    settings: ManagerSettings,
) -> None:
    scraper = "metrics-reader-token"
    guarded = settings.model_copy(update={"metrics_token": scraper})
    async with serve_manager(guarded) as manager, httpx.AsyncClient(base_url=manager.url) as anon:
        await manager.register("w1", kubeconfig_for(free_port()))
        refused = await anon.get("/metrics")
        assert refused.status_code == 401
        assert "w1" not in refused.text
        wrong = await anon.get("/metrics", headers={"Authorization": "Bearer not-the-token"})
        assert wrong.status_code == 401
        read = await anon.get("/metrics", headers={"Authorization": f"Bearer {scraper}"})
        assert read.status_code == 200 and 'cluster="w1"' in read.text
        assert (await manager.client.get("/metrics")).status_code == 200
        # The metrics token is for /metrics only.
        api = await anon.get("/api/v1/clusters", headers={"Authorization": f"Bearer {scraper}"})
        assert api.status_code == 401
    public = settings.model_copy(update={"metrics_public": True})
    async with serve_manager(public) as manager, httpx.AsyncClient(base_url=manager.url) as anon:
        assert (await anon.get("/metrics")).status_code == 200
