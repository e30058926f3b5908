"""Admission webhooks, called by the API server: the same scenarios against kubesim and a real
kube-apiserver, with the test's own webhook server (tests/webhook_server.py) on 127.0.0.1.

Every configuration selects only the test's namespace, and starts with a canary webhook that
allows labelled probe ConfigMaps: kube-apiserver reads configurations through an informer, so
a test first waits until the canary is called, which makes the whole configuration active.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kubesim.ports import free_port
from tests.fidelity.harness import APPLY, MERGE, Client, eventually
from tests.webhook_server import (
    MUTATING,
    VALIDATING,
    WebhookPki,
    WebhookServer,
    allow,
    configuration,
    deny,
    http_error,
    in_namespace,
    make_pki,
    patch,
    slow,
    webhook,
)

Obj = dict[str, Any]
Install = Callable[..., Awaitable[str]]

CANARY = "/canary"
PROBE_LABEL = {"fidelity-webhook-probe": "yes"}


@pytest.fixture(scope="session")
def webhook_pki(tmp_path_factory: pytest.TempPathFactory) -> WebhookPki:
    return make_pki(Path(tmp_path_factory.mktemp("webhook-pki")))


@pytest.fixture
async def hooks(webhook_pki: WebhookPki) -> AsyncIterator[WebhookServer]:
    server = await WebhookServer(webhook_pki).start()
    server.route(CANARY, allow())
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def install(kube: Client, namespace: str, hooks: WebhookServer) -> AsyncIterator[Install]:
    """install(kind, webhooks, suffix=""): a configuration of `kind` ("Mutating" or
    "Validating") named after the namespace, with the canary first and the given webhooks
    after it, all limited to the test's namespace; returns its name once it is active.
    Deleted after the test."""
    created: list[str] = []

    async def install_configuration(kind: str, webhooks: list[Obj], suffix: str = "") -> str:
        name = f"{namespace}-{suffix or kind.lower()}"
        canary = webhook(
            "canary.fidelity.mkq.dev",
            hooks.url(CANARY),
            hooks.ca_bundle,
            objectSelector={"matchLabels": PROBE_LABEL},
        )
        selected = [{"namespaceSelector": in_namespace(namespace), **w} for w in webhooks]
        body = configuration(
            kind, name, [{**canary, "namespaceSelector": in_namespace(namespace)}, *selected]
        )
        path = MUTATING if kind == "Mutating" else VALIDATING
        await kube.ok("POST", path, body)
        created.append(f"{path}/{name}")
        before = len(hooks.calls(CANARY))

        async def active() -> bool:
            probe = {"metadata": {"generateName": "probe-", "labels": PROBE_LABEL}}
            await kube.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", probe)
            return len(hooks.calls(CANARY)) > before

        await eventually(active, f"webhook configuration {name} to be active")
        return name

    yield install_configuration
    for path in created:
        await kube.request("DELETE", path)


def _configmaps(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


def _job(name: str) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox:1.36"}],
                }
            }
        },
    }


# ---- mutating ------------------------------------------------------------------------------


async def test_mutating_webhook_patch_is_applied_to_the_created_object(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route(
        "/suspend",
        patch(
            [
                {"op": "replace", "path": "/spec/suspend", "value": True},
                {"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}},
            ]
        ),
    )
    await install(
        "Mutating",
        [
            webhook(
                "suspend.fidelity.mkq.dev",
                url,
                hooks.ca_bundle,
                groups=["batch"],
                resources=["jobs"],
            )
        ],
    )
    path = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    created = await kube.ok("POST", path, _job("mutated"))
    assert created["spec"]["suspend"] is True
    assert created["metadata"]["labels"]["mutated"] == "yes"
    stored = await kube.ok("GET", f"{path}/mutated")
    assert stored["spec"]["suspend"] is True and stored["metadata"]["labels"]["mutated"] == "yes"


async def test_mutating_webhook_sees_the_decoded_object_before_the_registry_fills_it(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    """The AdmissionReview of a create: scheme defaults applied (suspend, completions), no uid
    or creationTimestamp yet, no name for generateName, the CreateOptions sent."""
    url = hooks.route("/look", allow())
    await install(
        "Mutating",
        [
            webhook(
                "look.fidelity.mkq.dev", url, hooks.ca_bundle, groups=["batch"], resources=["jobs"]
            )
        ],
    )
    body = _job("")
    body["metadata"] = {"generateName": "look-"}
    await kube.ok(
        "POST", f"/apis/batch/v1/namespaces/{namespace}/jobs", body, query={"fieldManager": "fid"}
    )
    request = hooks.calls("/look")[-1]
    assert request["kind"] == {"group": "batch", "version": "v1", "kind": "Job"}
    assert request["resource"] == {"group": "batch", "version": "v1", "resource": "jobs"}
    assert request["requestKind"] == request["kind"]
    assert request["requestResource"] == request["resource"]
    assert "name" not in request and request["namespace"] == namespace
    assert request["operation"] == "CREATE" and request["dryRun"] is False
    assert request["oldObject"] is None
    assert request["options"] == {
        "kind": "CreateOptions",
        "apiVersion": "meta.k8s.io/v1",
        "fieldManager": "fid",
    }
    obj = request["object"]
    assert (obj["apiVersion"], obj["kind"]) == ("batch/v1", "Job")
    assert obj["metadata"]["generateName"] == "look-" and "name" not in obj["metadata"]
    assert "uid" not in obj["metadata"] and "creationTimestamp" not in obj["metadata"]
    spec = obj["spec"]
    assert (spec["suspend"], spec["completions"], spec["parallelism"]) == (False, 1, 1)
    assert "selector" not in spec
    assert request["userInfo"]["username"]


async def test_mutating_webhooks_run_in_configuration_name_order(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    def appending(letter: str) -> Any:
        def operations(request: Obj) -> list[Obj]:
            annotations = request["object"]["metadata"].get("annotations")
            if annotations is None:
                return [{"op": "add", "path": "/metadata/annotations", "value": {"order": letter}}]
            order = annotations.get("order")
            value = f"{order},{letter}" if order else letter
            return [{"op": "add", "path": "/metadata/annotations/order", "value": value}]

        return patch(operations)

    # created first, named last: kube-apiserver sorts configurations by name
    late = hooks.route("/z", appending("z"))
    early = hooks.route("/a", appending("a"))
    await install("Mutating", [webhook("z.fidelity.mkq.dev", late, hooks.ca_bundle)], "z")
    await install("Mutating", [webhook("a.fidelity.mkq.dev", early, hooks.ca_bundle)], "a")
    created = await kube.ok("POST", _configmaps(namespace), {"metadata": {"name": "ordered"}})
    assert created["metadata"]["annotations"]["order"] == "a,z"


# ---- validating ----------------------------------------------------------------------------


async def test_validating_denial_answers_the_webhook_s_message_and_stores_nothing(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/deny", deny("no thanks"))
    await install("Validating", [webhook("deny.fidelity.mkq.dev", url, hooks.ca_bundle)])
    answer = await kube.request("POST", _configmaps(namespace), {"metadata": {"name": "refused"}})
    assert answer.status == 400
    body = answer.obj
    assert (
        body["message"] == 'admission webhook "deny.fidelity.mkq.dev" denied the request: no thanks'
    )
    assert body["status"] == "Failure" and body["code"] == 400
    assert "reason" not in body
    assert (await kube.request("GET", f"{_configmaps(namespace)}/refused")).status == 404


async def test_denial_keeps_the_webhook_s_code_and_reason(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/forbid", deny("over quota", code=403, reason="Forbidden"))
    await install("Validating", [webhook("forbid.fidelity.mkq.dev", url, hooks.ca_bundle)])
    answer = await kube.request("POST", _configmaps(namespace), {"metadata": {"name": "x"}})
    assert answer.status == 403
    assert answer.obj["reason"] == "Forbidden" and answer.obj["code"] == 403
    expected = 'admission webhook "forbid.fidelity.mkq.dev" denied the request: over quota'
    assert answer.obj["message"] == expected


async def test_denial_without_a_message_says_so(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    silent = hooks.route("/silent", deny())
    reasoned = hooks.route("/reasoned", deny(reason="NotToday"))
    await install(
        "Validating",
        [
            webhook(
                "silent.fidelity.mkq.dev",
                silent,
                hooks.ca_bundle,
                objectSelector={"matchLabels": {"w": "silent"}},
            ),
            webhook(
                "reasoned.fidelity.mkq.dev",
                reasoned,
                hooks.ca_bundle,
                objectSelector={"matchLabels": {"w": "reasoned"}},
            ),
        ],
    )
    path = _configmaps(namespace)
    answer = await kube.request(
        "POST", path, {"metadata": {"name": "s", "labels": {"w": "silent"}}}
    )
    assert (answer.status, answer.obj["message"]) == (
        400,
        'admission webhook "silent.fidelity.mkq.dev" denied the request without explanation',
    )
    answer = await kube.request(
        "POST", path, {"metadata": {"name": "r", "labels": {"w": "reasoned"}}}
    )
    assert (answer.status, answer.obj["message"], answer.obj["reason"]) == (
        400,
        'admission webhook "reasoned.fidelity.mkq.dev" denied the request: NotToday',
        "NotToday",
    )


async def test_update_and_delete_reviews_carry_the_old_object(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/watching", allow())
    await install(
        "Validating",
        [
            webhook(
                "watching.fidelity.mkq.dev", url, hooks.ca_bundle, operations=["UPDATE", "DELETE"]
            )
        ],
    )
    path = f"{_configmaps(namespace)}/tracked"
    await kube.ok(
        "POST", _configmaps(namespace), {"metadata": {"name": "tracked"}, "data": {"a": "1"}}
    )
    await kube.ok("PATCH", path, {"data": {"a": "2"}}, content_type=MERGE)
    update = hooks.calls("/watching")[-1]
    assert (update["operation"], update["name"], update["namespace"]) == (
        "UPDATE",
        "tracked",
        namespace,
    )
    assert update["oldObject"]["data"] == {"a": "1"} and update["object"]["data"] == {"a": "2"}
    assert update["options"] == {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
    await kube.ok("DELETE", path)
    delete = hooks.calls("/watching")[-1]
    assert (delete["operation"], delete["name"]) == ("DELETE", "tracked")
    assert delete["object"] is None and delete["oldObject"]["data"] == {"a": "2"}
    assert delete["options"]["kind"] == "DeleteOptions"
    assert delete["options"]["apiVersion"] == "meta.k8s.io/v1"


async def test_validating_webhook_sees_the_final_object(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/final", allow())
    await install(
        "Validating",
        [
            webhook(
                "final.fidelity.mkq.dev", url, hooks.ca_bundle, groups=["batch"], resources=["jobs"]
            )
        ],
    )
    created = await kube.ok("POST", f"/apis/batch/v1/namespaces/{namespace}/jobs", _job("final"))
    seen = hooks.calls("/final")[-1]["object"]
    assert seen["metadata"]["uid"] == created["metadata"]["uid"]
    assert seen["spec"]["selector"] == created["spec"]["selector"]
    assert "resourceVersion" not in seen["metadata"]


# ---- what a request matches ----------------------------------------------------------------


async def test_namespace_selector_leaves_other_namespaces_alone(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/deny", deny("not here"))
    await install("Validating", [webhook("deny.fidelity.mkq.dev", url, hooks.ca_bundle)])
    other = f"{namespace}-other"
    await kube.ok("POST", "/api/v1/namespaces", {"metadata": {"name": other}})
    try:
        assert (
            await kube.request("POST", _configmaps(namespace), {"metadata": {"name": "x"}})
        ).status == 400
        assert (
            await kube.request("POST", _configmaps(other), {"metadata": {"name": "x"}})
        ).status == 201
    finally:
        await kube.request("DELETE", f"/api/v1/namespaces/{other}")


async def test_object_selector_matches_the_new_or_the_old_labels(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/deny", deny("labelled"))
    await install(
        "Validating",
        [
            webhook(
                "deny.fidelity.mkq.dev",
                url,
                hooks.ca_bundle,
                operations=["CREATE", "UPDATE"],
                objectSelector={"matchLabels": {"guarded": "yes"}},
            )
        ],
    )
    path = _configmaps(namespace)
    assert (await kube.request("POST", path, {"metadata": {"name": "free"}})).status == 201
    labelled = {"metadata": {"name": "guarded", "labels": {"guarded": "yes"}}}
    assert (await kube.request("POST", path, labelled)).status == 400
    to_guarded = {"metadata": {"labels": {"guarded": "yes"}}}
    answer = await kube.request("PATCH", f"{path}/free", to_guarded, content_type=MERGE)
    assert answer.status == 400  # the new object matches


async def test_status_subresource_is_matched_only_by_a_status_rule(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/status", deny("status is frozen"))
    await install(
        "Validating",
        [
            webhook(
                "status.fidelity.mkq.dev",
                url,
                hooks.ca_bundle,
                groups=["kueue.x-k8s.io"],
                versions=["*"],
                resources=["localqueues/status"],
                operations=["UPDATE"],
            )
        ],
    )
    path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues"
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "lq"},
        "spec": {"clusterQueue": "cq"},
    }
    await kube.ok("POST", path, queue)
    await kube.ok("PATCH", f"{path}/lq", {"metadata": {"labels": {"a": "b"}}}, content_type=MERGE)
    answer = await kube.request(
        "PATCH", f"{path}/lq/status", {"status": {"pendingWorkloads": 1}}, content_type=MERGE
    )
    assert answer.status == 400
    request = hooks.calls("/status")[-1]
    assert request["subResource"] == "status" and request["requestSubResource"] == "status"
    assert request["kind"] == {
        "group": "kueue.x-k8s.io",
        "version": "v1beta2",
        "kind": "LocalQueue",
    }


async def test_custom_resource_review_has_the_schema_defaults(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/queues", allow())
    await install(
        "Mutating",
        [
            webhook(
                "queues.fidelity.mkq.dev",
                url,
                hooks.ca_bundle,
                groups=["kueue.x-k8s.io"],
                versions=["v1beta2"],
                resources=["localqueues"],
            )
        ],
    )
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "lq"},
        "spec": {"clusterQueue": "cq"},
    }
    await kube.ok("POST", f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues", queue)
    seen = hooks.calls("/queues")[-1]["object"]
    assert seen["spec"]["stopPolicy"] == "None"


async def test_a_namespace_s_own_requests_name_it_as_their_namespace(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    """For a Namespace the request's namespace is its name, and its namespaceSelector is
    matched against the new object's labels (which already carry kubernetes.io/metadata.name)."""
    new = f"{namespace}-new"
    url = hooks.route("/namespaces", allow())
    await install(
        "Validating",
        [
            webhook(
                "namespaces.fidelity.mkq.dev",
                url,
                hooks.ca_bundle,
                resources=["namespaces"],
                namespaceSelector=in_namespace(new),
            )
        ],
    )
    await kube.ok("POST", "/api/v1/namespaces", {"metadata": {"name": new}})
    try:
        request = hooks.calls("/namespaces")[-1]
        assert (request["name"], request["namespace"]) == (new, new)
        labels = request["object"]["metadata"]["labels"]
        assert labels["kubernetes.io/metadata.name"] == new
    finally:
        await kube.request("DELETE", f"/api/v1/namespaces/{new}")


async def test_server_side_apply_is_admitted_as_create_then_update(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/apply", allow())
    await install(
        "Validating",
        [webhook("apply.fidelity.mkq.dev", url, hooks.ca_bundle, operations=["CREATE", "UPDATE"])],
    )
    path = f"{_configmaps(namespace)}/applied"
    applied: Obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "applied"},
        "data": {"a": "1"},
    }
    query = {"fieldManager": "fid"}
    await kube.ok("PATCH", path, applied, query=query, content_type=APPLY)
    create = hooks.calls("/apply")[-1]
    assert create["operation"] == "CREATE" and create["oldObject"] is None
    assert create["options"] == {
        "kind": "CreateOptions",
        "apiVersion": "meta.k8s.io/v1",
        "fieldManager": "fid",
    }
    before = len(hooks.calls("/apply"))
    await kube.ok("PATCH", path, {**applied, "data": {"a": "2"}}, query=query, content_type=APPLY)
    # kube-apiserver may first try the apply as a create (it read no object yet) and, told it
    # exists, retry it as an update: the webhook then sees both; the update is what counts.
    later = hooks.calls("/apply")[before:]
    updates = [c for c in later if c["operation"] == "UPDATE"]
    assert updates, [c["operation"] for c in later]
    update = updates[-1]
    assert update["oldObject"]["data"] == {"a": "1"}
    assert update["options"] == {
        "kind": "UpdateOptions",
        "apiVersion": "meta.k8s.io/v1",
        "fieldManager": "fid",
    }


async def test_if_needed_webhooks_are_reinvoked_after_a_later_change(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    first = hooks.route("/first", allow())
    changer = hooks.route(
        "/changer",
        patch([{"op": "add", "path": "/metadata/labels", "value": {"changed": "yes"}}]),
    )
    await install(
        "Mutating",
        [
            webhook(
                "first.fidelity.mkq.dev", first, hooks.ca_bundle, reinvocationPolicy="IfNeeded"
            ),
            webhook("changer.fidelity.mkq.dev", changer, hooks.ca_bundle),
        ],
    )
    before = len(hooks.calls("/first"))
    created = await kube.ok("POST", _configmaps(namespace), {"metadata": {"name": "again"}})
    assert created["metadata"]["labels"] == {"changed": "yes"}
    calls = hooks.calls("/first")[before:]
    assert len(calls) == 2
    assert "labels" not in calls[0]["object"]["metadata"]
    assert calls[1]["object"]["metadata"]["labels"] == {"changed": "yes"}


async def test_equivalent_match_policy_calls_at_the_rule_s_version(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    group = f"{namespace}.fidelity.mkq.dev"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": version == "v1",
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
                for version in ("v1", "v2")
            ],
        },
    }
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    await kube.ok("POST", crds, crd)
    try:
        gadgets = f"/apis/{group}/v1/namespaces/{namespace}/gadgets"

        async def served() -> bool:
            return (await kube.request("GET", gadgets)).status == 200

        await eventually(served, "the CRD to be served")
        equivalent = hooks.route("/equivalent", allow())
        exact = hooks.route("/exact", allow())
        rule = {"groups": [group], "versions": ["v2"], "resources": ["gadgets"]}
        await install(
            "Validating",
            [
                webhook("equivalent.fidelity.mkq.dev", equivalent, hooks.ca_bundle, **rule),
                webhook(
                    "exact.fidelity.mkq.dev", exact, hooks.ca_bundle, matchPolicy="Exact", **rule
                ),
            ],
        )
        body = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"}}
        await kube.ok("POST", gadgets, body)
        request = hooks.calls("/equivalent")[-1]
        assert request["kind"] == {"group": group, "version": "v2", "kind": "Gadget"}
        assert request["requestKind"] == {"group": group, "version": "v1", "kind": "Gadget"}
        assert request["resource"]["version"] == "v2"
        assert request["requestResource"]["version"] == "v1"
        assert request["object"]["apiVersion"] == f"{group}/v2"
        assert hooks.calls("/exact") == []
    finally:
        await kube.request("DELETE", f"{crds}/gadgets.{group}")


# ---- failures ------------------------------------------------------------------------------


async def test_failure_policy_fail_refuses_when_the_webhook_is_unreachable(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    port = free_port()
    url = f"https://127.0.0.1:{port}/down"
    await install(
        "Validating",
        [
            webhook(
                "down.fidelity.mkq.dev",
                url,
                hooks.ca_bundle,
                failurePolicy="Fail",
                timeoutSeconds=2,
            )
        ],
    )
    answer = await kube.request("POST", _configmaps(namespace), {"metadata": {"name": "x"}})
    assert answer.status == 500
    cause = (
        f'failed calling webhook "down.fidelity.mkq.dev": failed to call webhook: Post '
        f'"{url}?timeout=2s": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )
    assert answer.obj["message"] == f"Internal error occurred: {cause}"
    assert answer.obj["reason"] == "InternalError"
    assert answer.obj["details"]["causes"] == [{"message": cause}]
    assert (await kube.request("GET", f"{_configmaps(namespace)}/x")).status == 404


async def test_failure_policy_ignore_lets_the_request_through(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = f"https://127.0.0.1:{free_port()}/down"
    await install(
        "Mutating",
        [webhook("down.fidelity.mkq.dev", url, hooks.ca_bundle, failurePolicy="Ignore")],
    )
    answer = await kube.request("POST", _configmaps(namespace), {"metadata": {"name": "x"}})
    assert answer.status == 201


async def test_a_webhook_slower_than_its_timeout_fails_the_call(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/slow", slow(4))
    await install(
        "Validating",
        [webhook("slow.fidelity.mkq.dev", url, hooks.ca_bundle, timeoutSeconds=1)],
    )
    answer = await kube.request("POST", _configmaps(namespace), {"metadata": {"name": "x"}})
    assert answer.status == 500
    expected = (
        'Internal error occurred: failed calling webhook "slow.fidelity.mkq.dev": failed to '
        f'call webhook: Post "{url}?timeout=1s": context deadline exceeded'
    )
    assert answer.obj["message"] == expected


async def test_a_webhook_with_the_wrong_ca_fails_the_call(
    kube: Client,
    namespace: str,
    hooks: WebhookServer,
    install: Install,
    tmp_path: Path,
) -> None:
    url = hooks.route("/untrusted", allow())
    other_ca = make_pki(tmp_path / "other", ca_name_text="some-other-ca").ca_bundle
    await install(
        "Validating",
        [webhook("untrusted.fidelity.mkq.dev", url, other_ca)],
    )
    answer = await kube.request("POST", _configmaps(namespace), {"metadata": {"name": "x"}})
    assert answer.status == 500
    assert answer.obj["message"] == (
        'Internal error occurred: failed calling webhook "untrusted.fidelity.mkq.dev": failed to '
        f'call webhook: Post "{url}?timeout=10s": tls: failed to verify certificate: x509: '
        "certificate signed by unknown authority"
    )


async def test_an_http_error_from_the_webhook_fails_the_call(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/broken", http_error(500, "boom"))
    await install("Validating", [webhook("broken.fidelity.mkq.dev", url, hooks.ca_bundle)])
    answer = await kube.request("POST", _configmaps(namespace), {"metadata": {"name": "x"}})
    assert answer.status == 500
    assert answer.obj["message"] == (
        'Internal error occurred: failed calling webhook "broken.fidelity.mkq.dev": failed to '
        'call webhook: an error on the server ("boom") has prevented the request from succeeding'
    )


async def test_a_response_for_another_request_fails_the_call(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/confused", lambda request: {"uid": "someone-else", "allowed": True})
    await install("Validating", [webhook("confused.fidelity.mkq.dev", url, hooks.ca_bundle)])
    answer = await kube.request("POST", _configmaps(namespace), {"metadata": {"name": "x"}})
    uid = hooks.calls("/confused")[-1]["uid"]
    assert answer.status == 500
    assert answer.obj["message"] == (
        'Internal error occurred: failed calling webhook "confused.fidelity.mkq.dev": received '
        f'invalid webhook response: expected response.uid="{uid}", got "someone-else"'
    )


async def test_a_patch_that_does_not_apply_is_an_internal_error(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/misfit", patch([{"op": "replace", "path": "/nope/deeper", "value": 1}]))
    await install(
        "Mutating",
        [webhook("misfit.fidelity.mkq.dev", url, hooks.ca_bundle, failurePolicy="Ignore")],
    )
    answer = await kube.request("POST", _configmaps(namespace), {"metadata": {"name": "x"}})
    # not a failed call: failurePolicy Ignore does not apply
    assert answer.status == 500 and answer.obj["reason"] == "InternalError"
    assert answer.obj["message"] == (
        "Internal error occurred: replace operation does not apply: doc is missing path: "
        "/nope/deeper: missing value"
    )
    assert (await kube.request("GET", f"{_configmaps(namespace)}/x")).status == 404


# ---- dry run and warnings ------------------------------------------------------------------


async def test_dry_run_calls_webhooks_with_dry_run_and_stores_nothing(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/dry", allow())
    await install("Validating", [webhook("dry.fidelity.mkq.dev", url, hooks.ca_bundle)])
    answer = await kube.request(
        "POST", _configmaps(namespace), {"metadata": {"name": "dry"}}, query={"dryRun": "All"}
    )
    assert answer.status == 201
    request = hooks.calls("/dry")[-1]
    assert request["dryRun"] is True and request["options"]["dryRun"] == ["All"]
    assert (await kube.request("GET", f"{_configmaps(namespace)}/dry")).status == 404


async def test_webhook_warnings_reach_the_client(
    kube: Client, namespace: str, hooks: WebhookServer, install: Install
) -> None:
    url = hooks.route("/warn", allow(warnings=["mind the gap"]))
    await install("Validating", [webhook("warn.fidelity.mkq.dev", url, hooks.ca_bundle)])
    answer = await kube.request("POST", _configmaps(namespace), {"metadata": {"name": "x"}})
    assert answer.status == 201
    assert answer.warnings == ('299 - "mind the gap"',)


# ---- the configurations themselves ---------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"sideEffects": None},
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        ),
        (
            {"sideEffects": "Some"},
            'webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", '
            '"NoneOnDryRun"',
        ),
        (
            {"name": "two.parts"},
            'webhooks[0].name: Invalid value: "two.parts": should be a domain with at least '
            "three segments separated by dots",
        ),
        (
            {"timeoutSeconds": 31},
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 "
            "and 30 seconds",
        ),
        (
            {"clientConfig": {"url": "http://127.0.0.1:1/x"}},
            "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed "
            "URL scheme; desired format: https://host[/path]",
        ),
        (
            {"admissionReviewVersions": ["v2"]},
            'webhooks[0].admissionReviewVersions: Invalid value: ["v2"]: must include at least '
            "one of v1, v1beta1",
        ),
    ],
)
async def test_invalid_configurations_are_refused(
    kube: Client, namespace: str, change: Obj, message: str
) -> None:
    hook = webhook("ok.fidelity.mkq.dev", "https://127.0.0.1:1/x", "")
    del hook["clientConfig"]["caBundle"]
    hook = {k: v for k, v in {**hook, **change}.items() if v is not None}
    name = f"{namespace}-invalid"
    answer = await kube.request("POST", VALIDATING, configuration("Validating", name, [hook]))
    assert answer.status == 422, answer.body
    assert answer.obj["message"] == (
        f'ValidatingWebhookConfiguration.admissionregistration.k8s.io "{name}" is invalid: '
        f"{message}"
    )


async def test_configuration_defaults(kube: Client, namespace: str) -> None:
    hook = webhook("ok.fidelity.mkq.dev", "https://127.0.0.1:1/x", "")
    del hook["clientConfig"]["caBundle"]
    name = f"{namespace}-defaults"
    created = await kube.ok("POST", MUTATING, configuration("Mutating", name, [hook]))
    try:
        stored = created["webhooks"][0]
        assert {
            k: stored[k]
            for k in (
                "failurePolicy",
                "matchPolicy",
                "namespaceSelector",
                "objectSelector",
                "timeoutSeconds",
                "reinvocationPolicy",
            )
        } == {
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "namespaceSelector": {},
            "objectSelector": {},
            "timeoutSeconds": 10,
            "reinvocationPolicy": "Never",
        }
        assert stored["rules"][0]["scope"] == "*"
        assert created["metadata"]["generation"] == 1
    finally:
        await kube.request("DELETE", f"{MUTATING}/{name}")
