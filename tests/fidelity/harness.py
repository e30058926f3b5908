"""The clients the fidelity suite talks through: HTTP via kubernetes-asyncio's ApiClient (its TLS,
auth and aiohttp session, as the project's KubeClient uses it) and the kubectl binary.

Both backends are reached the same way, so a test cannot tell which one it runs against except
by the answers it gets; that is the point of the suite.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import aiohttp
from kubernetes_asyncio import client, config

JSON = "application/json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

T = TypeVar("T")


@dataclass(frozen=True)
class Response:
    """One HTTP answer: status code and the decoded JSON body (None when empty or not JSON)."""

    status: int
    body: Any
    # The Warning headers' values (`299 - "text"`), in order.
    warnings: tuple[str, ...] = ()

    @property
    def obj(self) -> dict[str, Any]:
        """The body as an object; fails the test with the answer when it is not one."""
        assert isinstance(self.body, dict), f"expected an object, got {self.status}: {self.body!r}"
        return self.body


class Client:
    """REST calls on an ApiClient's session that return every answer (2xx or not) as data,
    so tests can assert status codes and Status bodies exactly."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api

    @classmethod
    async def from_kubeconfig(cls, path: Path) -> Client:
        configuration = client.Configuration()
        await config.load_kube_config(config_file=str(path), client_configuration=configuration)
        return cls(client.ApiClient(configuration))

    @classmethod
    def with_token(cls, admin: Client, token: str) -> Client:
        """A client with the admin's server and CA but another bearer token (and no client
        certificate): how a ServiceAccount's kubeconfig looks."""
        source = admin.api.configuration
        configuration = client.Configuration()
        configuration.host = source.host
        configuration.ssl_ca_cert = source.ssl_ca_cert
        configuration.verify_ssl = source.verify_ssl
        configuration.api_key = {"BearerToken": f"Bearer {token}"}
        return cls(client.ApiClient(configuration))

    async def close(self) -> None:
        await self.api.close()

    async def _open(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None,
        body: Any,
        content_type: str,
        seconds: float,
    ) -> aiohttp.ClientResponse:
        api = self.api
        headers = {"Accept": JSON, "Content-Type": content_type}
        headers.update(api.default_headers)
        params: list[tuple[str, str]] = list((query or {}).items())
        await api.update_params_for_auth(headers, params, ["BearerToken"])
        url = str(api.configuration.host) + path
        if params:
            url += "?" + urlencode(params)
        data = None if body is None else body if isinstance(body, bytes) else json.dumps(body)
        response: aiohttp.ClientResponse = await api.rest_client.pool_manager.request(
            method, url, headers=headers, data=data, timeout=aiohttp.ClientTimeout(total=seconds)
        )
        return response

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, str] | None = None,
        content_type: str = JSON,
    ) -> Response:
        response = await self._open(method, path, query, body, content_type, 30)
        async with response:
            raw = await response.read()
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode("utf-8", "replace")
        return Response(response.status, decoded, tuple(response.headers.getall("Warning", ())))

    async def ok(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, str] | None = None,
        content_type: str = JSON,
    ) -> dict[str, Any]:
        """A call that must succeed; its object."""
        answer = await self.request(method, path, body, query=query, content_type=content_type)
        assert 200 <= answer.status < 300, f"{method} {path}: {answer.status} {answer.body!r}"
        return answer.obj

    async def watch(
        self, path: str, query: dict[str, str], *, until: Callable[[list[Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        """The events of one watch, read until the server ends it (timeoutSeconds in `query`)
        or until `until(events)` holds."""
        seconds = float(query.get("timeoutSeconds", "10")) + 10
        response = await self._open("GET", path, {**query, "watch": "true"}, None, JSON, seconds)
        events: list[dict[str, Any]] = []
        async with response:
            assert response.status == 200, await response.text()
            async for line in response.content:
                if line.strip():
                    events.append(json.loads(line))
                    if until is not None and until(events):
                        break
        return events


@dataclass(frozen=True)
class KubectlResult:
    code: int
    out: str
    err: str


class Kubectl:
    """The kubectl binary against one backend (its own discovery cache per backend)."""

    def __init__(self, kubeconfig: Path, cache_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.cache_dir = cache_dir

    async def __call__(self, *args: str, stdin: str | None = None) -> KubectlResult:
        binary = shutil.which("kubectl")
        assert binary is not None, "kubectl must be on PATH"
        process = await asyncio.create_subprocess_exec(
            binary,
            "--kubeconfig",
            str(self.kubeconfig),
            "--cache-dir",
            str(self.cache_dir),
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else None,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(
            process.communicate(stdin.encode() if stdin is not None else None), 60
        )
        return KubectlResult(process.returncode or 0, out.decode(), err.decode())

    async def ok(self, *args: str, stdin: str | None = None) -> str:
        result = await self(*args, stdin=stdin)
        assert result.code == 0, f"kubectl {' '.join(args)} failed: {result.err}"
        return result.out


async def eventually(
    check: Callable[[], Awaitable[T]], what: str, seconds: float = 30.0, every: float = 0.1
) -> T:
    """Poll `check` until it returns something truthy, with a deadline (never a fixed sleep)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    last: T | None = None
    while loop.time() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(every)
    raise AssertionError(f"timed out after {seconds}s waiting for {what} (last: {last!r})")


def jwt_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT, unverified (what a client can read of its token)."""
    parts = token.split(".")
    assert len(parts) == 3, f"not a JWT: {token[:40]}..."
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload))
    return claims


def kubesim_difference(reason: str) -> Any:
    """Marks a test whose kubesim variant is a known, listed difference (kubesim/README.md,
    "Known differences from kube-apiserver"): that variant is xfail(strict=True), so the suite
    fails loudly once kubesim starts agreeing. The real variant runs as usual."""
    import pytest

    return pytest.mark.kubesim_difference(reason=reason)


RUN_FOR = "kubesim.mkq.dev/run-for"
EXIT_CODE = "kubesim.mkq.dev/exit-code"


def job_manifest(name: str, completions: int, annotations: dict[str, str]) -> dict[str, Any]:
    """A Job of `completions` pods run at once; the annotations say how long each runs and how
    it ends (kubesim's kubelet and the real clusters' KWOK stages read the same ones)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "completions": completions,
            "parallelism": completions,
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}],
                },
            },
        },
    }


def assert_refused(
    answer: Response,
    kind: str,
    name: str,
    field: str,
    message: str,
    more: tuple[tuple[str, str], ...] = (),
) -> None:
    """422 Invalid with these causes in this order, worded as kube-apiserver words them."""
    assert answer.status == 422, answer.body
    body = answer.obj
    assert body["reason"] == "Invalid"
    expected = [(field, message), *more]
    texts = [f"{path}: {what}" for path, what in expected]
    text = texts[0] if len(texts) == 1 else f"[{', '.join(texts)}]"
    assert body["message"] == f'{kind} "{name}" is invalid: {text}'
    causes = body["details"]["causes"]
    assert [(c["field"], c["message"]) for c in causes] == expected
