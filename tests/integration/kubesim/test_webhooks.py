"""kubesim calls admission webhooks as kube-apiserver does: what its fidelity suite
(tests/fidelity/test_webhooks.py) cannot show against a real cluster — webhooks named by a
Service (kubesim maps it to an address), concurrency, retries — and the main rules once more on
an in-process cluster."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubesim import ClusterSpec, RunningCluster, run_clusters
from tests.fidelity.harness import MERGE, Client
from tests.integration.kubesim.conftest import Kubectl
from tests.webhook_server import (
    MUTATING,
    VALIDATING,
    WebhookPki,
    WebhookServer,
    configuration,
    deny,
    make_pki,
    patch,
    slow,
    webhook,
)

Obj = dict[str, Any]
SERVICE_DNS = "hooks.webhooks.svc"  # Service "hooks" in namespace "webhooks"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> WebhookPki:
    return make_pki(Path(tmp_path_factory.mktemp("pki")), dns_names=[SERVICE_DNS])


@pytest.fixture
async def hooks(pki: WebhookPki) -> AsyncIterator[WebhookServer]:
    server = await WebhookServer(pki).start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def cluster(hooks: WebhookServer) -> AsyncIterator[RunningCluster]:
    spec = ClusterSpec(
        name="webhooks",
        webhook_services={"webhooks/hooks:443": f"https://127.0.0.1:{hooks.port}"},
    )
    async with run_clusters([spec]) as clusters:
        yield clusters[0]


@pytest.fixture
async def kube(cluster: RunningCluster) -> AsyncIterator[Client]:
    client = await Client.from_kubeconfig(cluster.kubeconfig_path)
    try:
        yield client
    finally:
        await client.close()


def _job(name: str) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x:1"}]}
            }
        },
    }


def _by_service(hook: Obj, path: str, name: str = "hooks", port: int = 443) -> Obj:
    ca_bundle = hook["clientConfig"]["caBundle"]
    service = {"namespace": "webhooks", "name": name, "path": path, "port": port}
    return {**hook, "clientConfig": {"service": service, "caBundle": ca_bundle}}


CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
JOBS = "/apis/batch/v1/namespaces/default/jobs"


async def test_mutating_webhook_named_by_a_service_suspends_jobs(
    kube: Client, hooks: WebhookServer
) -> None:
    hooks.route("/suspend", patch([{"op": "replace", "path": "/spec/suspend", "value": True}]))
    hook = webhook(
        "suspend.kubesim.mkq.dev", "", hooks.ca_bundle, groups=["batch"], resources=["jobs"]
    )
    body = configuration("Mutating", "suspend", [_by_service(hook, "/suspend")])
    await kube.ok("POST", MUTATING, body)
    created = await kube.ok("POST", JOBS, _job("held"))
    assert created["spec"]["suspend"] is True
    assert hooks.queries["/suspend"] == ["timeout=10s"]


async def test_a_service_mapped_once_running_is_called(
    kube: Client, cluster: RunningCluster, hooks: WebhookServer
) -> None:
    hooks.route("/late", deny("mapped late"))
    hook = webhook("late.kubesim.mkq.dev", "", hooks.ca_bundle)
    await kube.ok(
        "POST",
        VALIDATING,
        configuration("Validating", "late", [_by_service(hook, "/late", port=8443)]),
    )
    unmapped = await kube.request("POST", CONFIGMAPS, {"metadata": {"name": "a"}})
    assert unmapped.status == 500
    assert unmapped.obj["message"] == (
        'Internal error occurred: failed calling webhook "late.kubesim.mkq.dev": failed to call '
        'webhook: Post "https://hooks.webhooks.svc:8443/late?timeout=10s": service "hooks" not '
        "found"
    )
    cluster.serve_webhook_service("webhooks", "hooks", f"https://127.0.0.1:{hooks.port}", 8443)
    mapped = await kube.request("POST", CONFIGMAPS, {"metadata": {"name": "a"}})
    assert mapped.status == 400 and "mapped late" in mapped.obj["message"]


async def test_a_service_s_certificate_must_name_it(
    kube: Client, cluster: RunningCluster, hooks: WebhookServer
) -> None:
    """Verified for <name>.<namespace>.svc: the server's certificate names hooks.webhooks.svc."""
    hooks.route("/other", deny("unreachable"))
    cluster.serve_webhook_service("webhooks", "other", f"https://127.0.0.1:{hooks.port}")
    hook = _by_service(webhook("other.kubesim.mkq.dev", "", hooks.ca_bundle), "/other", "other")
    await kube.ok("POST", VALIDATING, configuration("Validating", "other", [hook]))
    answer = await kube.request("POST", CONFIGMAPS, {"metadata": {"name": "a"}})
    assert answer.status == 500
    assert answer.obj["message"].endswith(
        "tls: failed to verify certificate: x509: certificate is not valid for other.webhooks.svc"
    )
    assert hooks.calls("/other") == []


async def test_denial_refuses_and_stores_nothing(kube: Client, hooks: WebhookServer) -> None:
    url = hooks.route("/deny", deny("not today", code=422, reason="Invalid"))
    await kube.ok(
        "POST",
        VALIDATING,
        configuration(
            "Validating", "deny", [webhook("deny.kubesim.mkq.dev", url, hooks.ca_bundle)]
        ),
    )
    answer = await kube.request("POST", CONFIGMAPS, {"metadata": {"name": "kept-out"}})
    assert (answer.status, answer.obj["reason"]) == (422, "Invalid")
    assert (
        answer.obj["message"]
        == 'admission webhook "deny.kubesim.mkq.dev" denied the request: not today'
    )
    assert (await kube.request("GET", f"{CONFIGMAPS}/kept-out")).status == 404


async def test_failure_policy_decides_what_an_unreachable_webhook_means(
    kube: Client, hooks: WebhookServer
) -> None:
    down = "https://127.0.0.1:1/down"
    down_hooks = [
        webhook(
            "fail.kubesim.mkq.dev",
            down,
            hooks.ca_bundle,
            objectSelector={"matchLabels": {"p": "fail"}},
        ),
        webhook(
            "ignore.kubesim.mkq.dev",
            down,
            hooks.ca_bundle,
            failurePolicy="Ignore",
            objectSelector={"matchLabels": {"p": "ignore"}},
        ),
    ]
    await kube.ok("POST", VALIDATING, configuration("Validating", "down", down_hooks))
    failed = await kube.request(
        "POST", CONFIGMAPS, {"metadata": {"name": "f", "labels": {"p": "fail"}}}
    )
    assert failed.status == 500 and "connect: connection refused" in failed.obj["message"]
    ignored = await kube.request(
        "POST", CONFIGMAPS, {"metadata": {"name": "i", "labels": {"p": "ignore"}}}
    )
    assert ignored.status == 201


async def test_timeout_fails_the_call_in_time(kube: Client, hooks: WebhookServer) -> None:
    url = hooks.route("/slow", slow(5))
    hook = webhook(
        "slow.kubesim.mkq.dev", url, hooks.ca_bundle, timeoutSeconds=1, failurePolicy="Ignore"
    )
    await kube.ok("POST", VALIDATING, configuration("Validating", "slow", [hook]))
    started = time.monotonic()
    answer = await kube.request("POST", CONFIGMAPS, {"metadata": {"name": "late"}})
    assert answer.status == 201
    assert 1 <= time.monotonic() - started < 3


async def test_namespace_and_object_selectors_narrow_the_calls(
    kube: Client, hooks: WebhookServer
) -> None:
    url = hooks.route("/deny", deny("selected"))
    await kube.ok(
        "POST", "/api/v1/namespaces", {"metadata": {"name": "guarded", "labels": {"team": "a"}}}
    )
    hook = webhook(
        "deny.kubesim.mkq.dev",
        url,
        hooks.ca_bundle,
        namespaceSelector={"matchLabels": {"team": "a"}},
        objectSelector={"matchExpressions": [{"key": "exempt", "operator": "DoesNotExist"}]},
    )
    await kube.ok("POST", VALIDATING, configuration("Validating", "selectors", [hook]))
    assert (await kube.request("POST", CONFIGMAPS, {"metadata": {"name": "x"}})).status == 201
    guarded = "/api/v1/namespaces/guarded/configmaps"
    assert (await kube.request("POST", guarded, {"metadata": {"name": "x"}})).status == 400
    exempt = {"metadata": {"name": "y", "labels": {"exempt": "yes"}}}
    assert (await kube.request("POST", guarded, exempt)).status == 201


async def test_validating_webhooks_are_called_concurrently(
    kube: Client, hooks: WebhookServer
) -> None:
    urls = [hooks.route(f"/slow{i}", slow(1)) for i in range(3)]
    webhooks = [
        webhook(f"slow{i}.kubesim.mkq.dev", url, hooks.ca_bundle) for i, url in enumerate(urls)
    ]
    await kube.ok("POST", VALIDATING, configuration("Validating", "parallel", webhooks))
    started = time.monotonic()
    assert (await kube.request("POST", CONFIGMAPS, {"metadata": {"name": "x"}})).status == 201
    assert time.monotonic() - started < 2.5


async def test_a_write_that_raced_the_webhook_call_starts_over(
    kube: Client, hooks: WebhookServer
) -> None:
    """An update waits for a webhook while another write changes the object: the update is
    tried again on the new object (admitted again), as kube-apiserver's GuaranteedUpdate
    retries, so neither change is lost."""
    await kube.ok("POST", CONFIGMAPS, {"metadata": {"name": "raced"}, "data": {"a": "1"}})
    called = asyncio.Event()

    async def held(request: Obj) -> Obj:
        called.set()
        await asyncio.sleep(0.5)
        return {"allowed": True}

    url = hooks.route("/slow", held)
    hook = webhook(
        "slow.kubesim.mkq.dev",
        url,
        hooks.ca_bundle,
        operations=["UPDATE"],
        objectSelector={"matchLabels": {"slow": "yes"}},
    )
    await kube.ok("POST", VALIDATING, configuration("Validating", "slow", [hook]))
    path = f"{CONFIGMAPS}/raced"
    slow_patch = {"metadata": {"labels": {"slow": "yes"}}, "data": {"b": "2"}}
    waiting = asyncio.create_task(kube.request("PATCH", path, slow_patch, content_type=MERGE))
    await called.wait()
    await kube.ok("PATCH", path, {"data": {"c": "3"}}, content_type=MERGE)
    answer = await waiting
    assert answer.status == 200, answer.body
    assert answer.obj["data"] == {"a": "1", "b": "2", "c": "3"}
    assert len(hooks.calls("/slow")) == 2


async def test_webhook_configurations_are_never_sent_to_webhooks(
    kube: Client, hooks: WebhookServer
) -> None:
    url = hooks.route("/deny", deny("everything"))
    hook = webhook(
        "all.kubesim.mkq.dev",
        url,
        hooks.ca_bundle,
        groups=["*"],
        versions=["*"],
        resources=["*/*"],
        operations=["*"],
    )
    await kube.ok("POST", VALIDATING, configuration("Validating", "all", [hook]))
    assert (await kube.request("POST", CONFIGMAPS, {"metadata": {"name": "x"}})).status == 400
    assert (await kube.request("DELETE", f"{VALIDATING}/all")).status == 200
    assert (await kube.request("POST", CONFIGMAPS, {"metadata": {"name": "x"}})).status == 201


@pytest.mark.kubectl
async def test_kubectl_applies_lists_and_deletes_configurations(
    kubectl: Kubectl, hooks: WebhookServer
) -> None:
    hook = webhook("listed.kubesim.mkq.dev", hooks.url("/x"), hooks.ca_bundle)
    body = configuration("Mutating", "listed", [hook, {**hook, "name": "b.kubesim.mkq.dev"}])
    await kubectl.ok("apply", "-f", "-", stdin=json.dumps(body))
    listed = await kubectl.ok("get", "mutatingwebhookconfigurations")
    assert listed.split("\n")[0].split() == ["NAME", "WEBHOOKS", "AGE"]
    assert listed.split("\n")[1].split()[:2] == ["listed", "2"]
    out = await kubectl.ok("delete", "mutatingwebhookconfiguration", "listed")
    assert 'mutatingwebhookconfiguration.admissionregistration.k8s.io "listed" deleted' in out
