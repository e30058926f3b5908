"""Hostile input at the REST API: limits at the door, and a 4xx naming the problem, never a 500.

Most cases go over real HTTP to a running manager (as the other API tests). What must be seen
at the ASGI level (that a body was *not* read, that a chunked body was cut off) drives the same
app directly, with the running manager's runtime.
"""

from __future__ import annotations

import base64
import itertools
import json
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from kubesim.ports import free_port
from manager.api.app import create_app
from manager.api.routers import clusters, health, queues, reports, workloads
from manager.runtime import ManagerRuntime
from manager.settings import ManagerSettings
from tests.integration.manager.harness import API_TOKEN, RunningManager, serve_manager
from tests.integration.manager.test_api_input import job, kubeconfig_for

BILLION_LAUGHS = b"""apiVersion: batch/v1
kind: Job
metadata: {name: bomb, namespace: default, labels: {kueue.x-k8s.io/queue-name: q}}
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
spec: *i
"""
DEEP_JSON = b"[" * 1000 + b"]" * 1000
DEEP_YAML = b"a: " + b"[" * 1000 + b"]" * 1000
DEEP_BLOCK_YAML = b"- " * 1000 + b"x\n"  # block style: libyaml's own flow limit does not apply
YAML = {"content-type": "application/yaml"}
MiB = 1024 * 1024


@pytest.fixture
async def manager(settings: ManagerSettings) -> AsyncIterator[RunningManager]:
    async with serve_manager(settings) as running:
        yield running


# -- driving the app at the ASGI level -----------------------------------------------------


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    chunks_read: int


def app_on(runtime: ManagerRuntime) -> FastAPI:
    """The manager's app on a runtime that is already open (no lifespan)."""

    async def no_runtime() -> ManagerRuntime:
        raise AssertionError("the runtime is given, not opened")

    app = create_app(no_runtime)
    app.state.runtime = runtime
    return app


async def call(
    app: FastAPI,
    method: str,
    path: str,
    chunks: Iterable[bytes] = (),
    headers: dict[str, str] | None = None,
) -> Answer:
    """One request; `chunks` is the body as the client streams it (possibly endless)."""
    source = iter(chunks)
    pending = next(source, None)
    read = 0

    async def receive() -> dict[str, Any]:
        nonlocal pending, read
        if pending is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        chunk, pending = pending, next(source, None)
        read += 1
        return {"type": "http.request", "body": chunk, "more_body": pending is not None}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return Answer(start["status"], json.loads(body) if body else {}, read)


def auth(token: str = API_TOKEN) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", "content-type": "application/json"}


# -- 1. auth before body -------------------------------------------------------------------


async def test_no_body_is_read_before_the_token_is_checked(manager: RunningManager) -> None:
    agent_token = await manager.register("w1", kubeconfig_for(free_port()))
    app = app_on(manager.runtime)
    endless = itertools.repeat(b"x" * 65536)  # a body that never ends
    for method, path, token in [
        ("POST", "/api/v1/clusters", None),
        ("POST", "/api/v1/clusters", "wrong-token"),
        ("POST", "/api/v1/workloads", None),
        ("PUT", "/api/v1/workloads/default/x/nominations", "wrong-token"),
        ("POST", "/api/v1/clusters/w1/reports", API_TOKEN),  # a user token is not an agent's
        ("POST", "/api/v1/clusters/w1/reports", None),
    ]:
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        answer = await call(app, method, path, endless, headers)
        assert answer.status == 401, (method, path, answer)
        assert answer.body["error"]["reason"] == "Unauthorized"
        assert answer.chunks_read == 0, (method, path)
    # With its token, the agent's report is read (and this one is valid).
    answer = await call(
        app, "POST", "/api/v1/clusters/w1/reports", [b'{"reportId": "r1"}'], auth(agent_token)
    )
    assert answer.status == 200, answer


def api_routes() -> list[APIRoute]:
    """The routes of every router create_app includes."""
    included = (clusters.router, reports.router, workloads.router, queues.router, health.router)
    return [route for router in included for route in router.routes if isinstance(route, APIRoute)]


def test_no_route_has_fastapi_read_its_body() -> None:
    """A declared body parameter is read before the dependencies (the token check) run."""
    routes = api_routes()
    assert len(routes) > 10
    assert [r.path for r in routes if r.body_field is not None] == []


# -- 2. body size limit --------------------------------------------------------------------


async def test_a_body_over_the_declared_limit_is_413_unread(manager: RunningManager) -> None:
    app = app_on(manager.runtime)
    limit = manager.runtime.settings.max_body_bytes
    assert limit == 3 * MiB
    ten_mb = [b"x" * (10 * MiB)]
    for path in ("/api/v1/workloads", "/api/v1/clusters"):
        headers = auth() | {"content-length": str(10 * MiB)}
        answer = await call(app, "POST", path, ten_mb, headers)
        assert answer.status == 413, answer
        assert answer.body["error"]["reason"] == "RequestEntityTooLarge"
        assert answer.body["error"]["field"] == "(body)"
        assert str(limit) in answer.body["error"]["message"]
        assert answer.chunks_read == 0


async def test_a_chunked_body_growing_past_the_limit_is_cut_off(manager: RunningManager) -> None:
    app = app_on(manager.runtime)
    endless = itertools.repeat(b" " * 65536)
    answer = await call(app, "POST", "/api/v1/workloads", endless, auth())
    assert answer.status == 413
    assert answer.body["error"]["field"] == "(body)"
    assert answer.chunks_read == 3 * MiB // 65536 + 1


async def test_the_limit_is_a_setting_and_holds_over_http(settings: ManagerSettings) -> None:
    async with serve_manager(settings.model_copy(update={"max_body_bytes": 4096})) as manager:
        big = job()
        big["metadata"]["annotations"] = {"note": "x" * 8192}
        response = await manager.client.post("/api/v1/workloads", json=big)
        assert response.status_code == 413
        assert response.json()["error"]["reason"] == "RequestEntityTooLarge"
        assert (await manager.client.post("/api/v1/workloads", json=job())).status_code == 201


async def test_a_ten_megabyte_report_is_413(manager: RunningManager) -> None:
    token = await manager.register("w1", kubeconfig_for(free_port()))
    app = app_on(manager.runtime)
    report = json.dumps({"reportId": "r", "finishes": [], "pad": "x" * (10 * MiB)}).encode()
    answer = await call(app, "POST", "/api/v1/clusters/w1/reports", [report], auth(token))
    assert answer.status == 413
    assert answer.body["error"]["field"] == "(body)"


# -- 3. YAML and JSON parsing bounded ------------------------------------------------------


async def test_a_yaml_alias_bomb_is_refused_at_once(manager: RunningManager) -> None:
    assert len(BILLION_LAUGHS) < 700
    started = time.monotonic()
    response = await manager.client.post("/api/v1/workloads", content=BILLION_LAUGHS, headers=YAML)
    assert time.monotonic() - started < 2
    assert response.status_code == 400
    assert "aliases expand to more than" in response.json()["error"]["message"]
    assert (await manager.client.get("/api/v1/workloads")).json()["items"] == []


async def test_an_alias_bomb_in_a_kubeconfig_is_refused(manager: RunningManager) -> None:
    response = await manager.client.post(
        "/api/v1/clusters", json={"name": "w1", "kubeconfig": BILLION_LAUGHS.decode()}
    )
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "kubeconfig"
    assert "aliases expand to more than" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("path", "body", "headers"),
    [
        ("/api/v1/workloads", DEEP_JSON, {"content-type": "application/json"}),
        ("/api/v1/workloads", DEEP_YAML, YAML),
        ("/api/v1/workloads", DEEP_BLOCK_YAML, YAML),
        ("/api/v1/clusters", DEEP_JSON, {"content-type": "application/json"}),
        ("/api/v1/clusters/w1/reports", DEEP_JSON, {"content-type": "application/json"}),
    ],
)
async def test_deep_nesting_is_a_400(
    manager: RunningManager, path: str, body: bytes, headers: dict[str, str]
) -> None:
    token = await manager.register("w1", kubeconfig_for(free_port()))
    if "reports" in path:
        headers = headers | {"authorization": f"Bearer {token}"}
    response = await manager.client.post(path, content=body, headers=headers)
    assert response.status_code == 400, response.text
    # Ours ("nested deeper than 100 levels"), or libyaml's for flow style ("nesting depth").
    assert "nest" in response.json()["error"]["message"]


async def test_a_deep_yaml_kubeconfig_is_a_422_naming_it(manager: RunningManager) -> None:
    deep = "clusters:\n" + "- " * 1000 + "x\n"
    response = await manager.client.post(
        "/api/v1/clusters", json={"name": "w1", "kubeconfig": deep}
    )
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "kubeconfig"
    assert "nested deeper than 100 levels" in response.json()["error"]["message"]


async def test_nesting_within_the_bound_is_accepted(manager: RunningManager) -> None:
    body = job()
    body["spec"]["template"]["metadata"] = {"annotations": {"x": "y"}}
    value: Any = "leaf"
    for _ in range(90):
        value = [value]
    body["spec"]["extra"] = value
    assert (await manager.client.post("/api/v1/workloads", json=body)).status_code == 201


async def test_a_yaml_integer_map_key_is_refused_naming_the_path(
    manager: RunningManager,
) -> None:
    text = (
        b"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: k\n"
        b"  labels: {kueue.x-k8s.io/queue-name: q, 1: one}\nspec: {}\n"
    )
    response = await manager.client.post("/api/v1/workloads", content=text, headers=YAML)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "metadata.labels.1"
    assert "map keys must be strings" in error["message"]


# -- 4. object limits at submission --------------------------------------------------------


async def test_annotations_over_256_kib_are_a_422(manager: RunningManager) -> None:
    body = job()
    body["metadata"]["annotations"] = {"a": "x" * (200 * 1024), "b": "y" * (100 * 1024)}
    response = await manager.client.post("/api/v1/workloads", json=body)
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "metadata.annotations"
    assert "262144" in response.json()["error"]["message"]
    body["spec"]["template"]["metadata"] = body.pop("metadata") | {}
    body["metadata"] = job()["metadata"]
    templated = await manager.client.post("/api/v1/workloads", json=body)
    assert templated.status_code == 422
    assert templated.json()["error"]["field"] == "spec.template.metadata.annotations"


async def test_an_object_over_one_and_a_half_mib_is_a_422(manager: RunningManager) -> None:
    body = job()
    container = body["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": f"V{i}", "value": "x" * 100_000} for i in range(20)]
    response = await manager.client.post("/api/v1/workloads", json=body)
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "(body)"
    assert "1572864" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("where", "value", "field"),
    [
        ("parallelism", 2**70, "spec.parallelism"),
        ("parallelism", 2**31, "spec.parallelism"),
        ("completions", 2**40, "spec.completions"),
        ("parallelism", float("inf"), "spec.parallelism"),
    ],
)
async def test_integers_out_of_range_are_a_422_naming_the_field(
    manager: RunningManager, where: str, value: Any, field: str
) -> None:
    body = job()
    body["spec"][where] = value
    text = json.dumps(body).replace("Infinity", "1e999")  # 1e999 parses as inf
    response = await manager.client.post(
        "/api/v1/workloads", content=text, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == field
    # JSON is YAML: the same document through the YAML path (where infinity is spelt .inf).
    as_yaml = await manager.client.post(
        "/api/v1/workloads", content=text.replace("1e999", ".inf"), headers=YAML
    )
    assert as_yaml.status_code == 422, as_yaml.text
    assert as_yaml.json()["error"]["field"] == field


async def test_jobset_pods_must_fit_an_int32(manager: RunningManager) -> None:
    pod = job()["spec"]
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": job()["metadata"],
        "spec": {
            "replicatedJobs": [
                {"name": "w", "replicas": 2**30, "template": {"spec": pod | {"parallelism": 4}}}
            ]
        },
    }
    response = await manager.client.post("/api/v1/workloads", json=jobset)
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "spec.replicatedJobs[0].replicas"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("namespace", "n" * 64),
        ("namespace", "Upper"),
        ("name", "j" * 64),
        ("name", "under_score"),
    ],
)
async def test_names_must_be_dns_labels(manager: RunningManager, field: str, value: str) -> None:
    body = job()
    body["metadata"][field] = value
    response = await manager.client.post("/api/v1/workloads", json=body)
    assert response.status_code == 422
    assert response.json()["error"]["field"] == f"metadata.{field}"


async def test_label_values_follow_kubernetes_rules(manager: RunningManager) -> None:
    body = job()
    body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "q" * 64
    response = await manager.client.post("/api/v1/workloads", json=body)
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "metadata.labels[kueue.x-k8s.io/queue-name]"


# -- 5. NUL bytes and continue tokens ------------------------------------------------------


async def test_nul_bytes_are_a_400(manager: RunningManager) -> None:
    token = await manager.register("w1", kubeconfig_for(free_port()))
    for url, where in [
        ("/api/v1/workloads?namespace=a%00b", "query"),
        ("/api/v1/workloads/a%00b/x", "path"),
        ("/api/v1/clusters/w%001", "path"),
        ("/api/v1/clusters/w%001/reports", "path"),
    ]:
        response = await manager.client.get(url) if "reports" not in url else None
        if response is None:
            response = await manager.client.post(url, json={"reportId": "r"})
        assert response.status_code == 400, (url, response.text)
        assert response.json()["error"] == {
            "reason": "BadRequest",
            "message": f"the {where} contains a NUL byte",
            "field": where,
        }
    body = job()
    body["metadata"]["annotations"] = {"note": "a\x00b"}
    response = await manager.client.post("/api/v1/workloads", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "metadata.annotations.note"
    assert "NUL" in response.json()["error"]["message"]
    report = {"reportId": "r\x00", "finishes": []}
    agent = {"Authorization": f"Bearer {token}"}
    response = await manager.client.post("/api/v1/clusters/w1/reports", json=report, headers=agent)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "reportId"


@pytest.mark.parametrize(
    "token",
    [
        "garbage!",
        base64.urlsafe_b64encode(b"id:99999999999999999999999").decode(),
        base64.urlsafe_b64encode(b"id:-1").decode(),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        "a",
    ],
)
async def test_a_forged_continue_token_is_a_400(manager: RunningManager, token: str) -> None:
    for url in ("/api/v1/workloads", "/api/v1/clusters"):
        response = await manager.client.get(url, params={"continue": token})
        assert response.status_code == 400
        assert response.json()["error"] == {
            "reason": "BadRequest",
            "message": "the continue token is not valid",
            "field": "continue",
        }


# -- 6. the sweep: every hostile input to every endpoint with a body ----------------------

HOSTILE: list[tuple[str, bytes, str]] = [
    ("alias bomb", BILLION_LAUGHS, "application/yaml"),
    ("deep JSON", DEEP_JSON, "application/json"),
    ("deep YAML", DEEP_YAML, "application/yaml"),
    ("deep block YAML", DEEP_BLOCK_YAML, "application/yaml"),
    ("deeper JSON", b"{" + b'"a":{' * 5000 + b"}" * 5001, "application/json"),
    ("integer key", b"{1: x, 2: [a]}", "application/yaml"),
    ("null key", b"? null\n: x\n", "application/yaml"),
    ("complex key", b"? [a, b]\n: x\n", "application/yaml"),
    ("binary", b"reportId: !!binary aGVsbG8=\n", "application/yaml"),
    ("set", b"reportId: !!set {a, b}\n", "application/yaml"),
    ("timestamp", b"reportId: !!timestamp 2001-12-14\n", "application/yaml"),
    ("two documents", b"a: 1\n---\nb: 2\n", "application/yaml"),
    ("NUL", json.dumps({"name": "a\x00", "reportId": "\x00", "clusters": ["\x00"]}).encode(), ""),
    ("NUL key", json.dumps({"a\x00": 1}).encode(), "application/json"),
    ("surrogate", b'{"name": "\\ud800", "reportId": "\\udfff"}', "application/json"),
    ("huge int", b'{"reportId": "r", "admissions": [{"count": ' + b"9" * 40 + b"}]}", ""),
    ("too many digits", b"[" + b"9" * 5000 + b"]", "application/json"),
    ("NaN", b'{"reportId": NaN}', "application/json"),
    ("inf", b'{"reportId": 1e999}', "application/json"),
    ("not UTF-8", b'{"name": "\xff\xfe"}', "application/json"),
    ("UTF-16", '{"reportId": "r"}'.encode("utf-16"), "application/json"),
    ("empty", b"", "application/json"),
    ("null", b"null", "application/json"),
    ("list", b"[]", "application/json"),
    ("string", b'"x"', "application/json"),
    ("number", b"1", "application/json"),
    ("broken", b"{nope", "application/json"),
    ("long strings", json.dumps({"name": "n" * 100_000, "reportId": "r" * 100_000}).encode(), ""),
    (
        "odd kubeconfig",
        json.dumps({"name": "w9", "kubeconfig": {"contexts": ["x"], "clusters": "y"}}).encode(),
        "application/json",
    ),
    (
        "odd kubeconfig text",
        json.dumps({"name": "w9", "kubeconfig": "contexts: [{name: [1]}]"}).encode(),
        "application/json",
    ),
    (
        "kubeconfig bomb",
        json.dumps({"name": "w9", "kubeconfig": BILLION_LAUGHS.decode()}).encode(),
        "",
    ),
    (
        "hostile report",
        json.dumps(
            {
                "reportId": "r",
                "admissions": [{"namespace": "n" * 10_000, "name": "x" * 10_000, "podSets": []}],
                "finishes": [{"namespace": "a", "name": "b", "state": "Failed", "message": "m"}],
                "evictions": [{"namespace": "a", "name": "b", "reason": "r" * 10_000}],
                "capacity": [
                    {
                        "clusterQueue": "c" * 10_000,
                        "flavor": "f",
                        "resource": "cpu",
                        "nominal": "1e4000",
                        "usage": "1",
                    }
                ],
            }
        ).encode(),
        "application/json",
    ),
    ("job with NUL name", json.dumps(job("a\x00")).encode(), "application/json"),
    (
        "job with huge quantity",
        json.dumps(job()).replace('"cpu": "1"', '"cpu": "9e999999"').encode(),
        "application/json",
    ),
    (
        "job with odd shapes",
        json.dumps(
            job()
            | {"spec": {"template": {"spec": {"containers": [1, "x"], "initContainers": "y"}}}}
        ).encode(),
        "application/json",
    ),
    (
        "job with odd annotations",
        json.dumps(
            {**job(), "metadata": {**job()["metadata"], "annotations": {"k": 1, "/": "v"}}}
        ).encode(),
        "application/json",
    ),
]


async def test_no_hostile_input_gets_a_5xx_from_any_endpoint(manager: RunningManager) -> None:
    token = await manager.register("w1", kubeconfig_for(free_port()))
    created = await manager.client.post("/api/v1/workloads", json=job("target"))
    assert created.status_code == 201
    endpoints = {
        ("POST", "/api/v1/workloads"): API_TOKEN,
        ("POST", "/api/v1/clusters"): API_TOKEN,
        ("POST", "/api/v1/clusters/w1/reports"): token,
        ("PUT", "/api/v1/workloads/default/target/nominations"): API_TOKEN,
        ("POST", "/api/v1/clusters/w1/token"): API_TOKEN,  # last: it rotates the agent's token
    }
    # Every route that takes a body is in the sweep (a new one must be added above).
    with_body = {
        (method, route.path)
        for route in api_routes()
        for method in route.methods
        if method in {"POST", "PUT", "PATCH"}
    }
    swept = {(m, p.replace("w1", "{name}")) for m, p in endpoints}
    swept = {(m, p.replace("default/target", "{namespace}/{name}")) for m, p in swept}
    assert with_body == swept
    failures = []
    for (method, path), bearer in endpoints.items():
        for label, body, content_type in HOSTILE:
            for ctype in {content_type or "application/json", "application/yaml"}:
                headers = {"Authorization": f"Bearer {bearer}", "content-type": ctype}
                response = await manager.client.request(method, path, content=body, headers=headers)
                refused_clearly = response.status_code < 400 or "error" in response.json()
                if response.status_code >= 500 or not refused_clearly:
                    failures.append((method, path, label, ctype, response.status_code))
    assert failures == []
    # And the manager still serves.
    assert (await manager.client.get("/api/v1/workloads")).status_code == 200
