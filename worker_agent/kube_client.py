"""A thin, generic Kubernetes client over kubernetes-asyncio's ApiClient that speaks plain JSON.

kubernetes-asyncio's typed APIs deserialize into generated classes, which is slow and does not
cover CRDs uniformly. The agent only needs REST verbs on paths, so it calls the ApiClient
directly (same auth, TLS and kubeconfig handling) and keeps objects as dicts.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from worker_agent.resources import ResourceType

JsonObject = dict[str, Any]
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NETRC")
_REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=60)


class ApiError(Exception):
    """A non-2xx answer from the API server, with the Status body's reason and message."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def gone(self) -> bool:
        return self.status == 410


def _error_from_body(status: int, text: str) -> ApiError:
    try:
        body = json.loads(text)
    except ValueError:
        return ApiError(status, "", text[:500])
    if not isinstance(body, dict):
        return ApiError(status, "", text[:500])
    return ApiError(status, str(body.get("reason", "")), str(body.get("message", text[:500])))


class KubeClient:
    """REST verbs on generic resources; every method returns or yields Kubernetes JSON."""

    def __init__(self, api_client: k8s_client.ApiClient) -> None:
        self._api = api_client
        if not any(os.environ.get(v) for v in _PROXY_VARIABLES):
            # kubernetes-asyncio opens its aiohttp session with trust_env=True, which costs two
            # thread hops per request (netrc and proxy lookups). With no proxy configured in
            # the environment there is nothing to find, so skip them.
            session = api_client.rest_client.pool_manager
            if hasattr(session, "_trust_env"):
                session._trust_env = False

    @classmethod
    async def from_kubeconfig(cls, path: str, context: str | None = None) -> KubeClient:
        configuration = k8s_client.Configuration()
        await k8s_config.load_kube_config(
            config_file=path, context=context, client_configuration=configuration
        )
        return cls(k8s_client.ApiClient(configuration))

    async def close(self) -> None:
        await self._api.close()

    async def _open(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: JsonObject | None = None,
        content_type: str = "application/json",
        client_timeout: aiohttp.ClientTimeout = _REQUEST_TIMEOUT,
        accept: str = "application/json",
    ) -> aiohttp.ClientResponse:
        """One request on the ApiClient's aiohttp session (its TLS, pool, proxy and auth).

        Bodies are already plain JSON, so neither ApiClient.call_api (its walk over bodies to
        serialize generated models) nor RESTClientObject.request (stdlib json, a regex on the
        content type, a fresh timeout per call) is needed: the body goes out as orjson bytes,
        which is most of what a write costs the agent besides the socket itself."""
        api = self._api
        headers = {"Accept": accept, "Content-Type": content_type}
        headers.update(api.default_headers)
        query_params: list[tuple[str, str]] = list((query or {}).items())
        await api.update_params_for_auth(headers, query_params, ["BearerToken"])
        url = str(api.configuration.host or "") + path
        if query_params:
            url += "?" + urlencode(query_params)
        rest = api.rest_client
        options: dict[str, Any] = {}
        for option in ("proxy", "proxy_headers", "server_hostname"):
            # What RESTClientObject.request passes on, when the configuration sets it.
            value = getattr(rest, option, None)
            if value:
                options[option] = value
        data = orjson.dumps(body) if body is not None else None
        response: aiohttp.ClientResponse = await rest.pool_manager.request(
            method, url, headers=headers, data=data, timeout=client_timeout, **options
        )
        return response

    async def request(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: JsonObject | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> JsonObject:
        """One call; `accept` asks for another rendering of the answer, such as the
        `meta.k8s.io/v1` Table kubectl prints."""
        response = await self._open(method, path, query, body, content_type, accept=accept)
        async with response:
            raw = await response.read()
            if not 200 <= response.status < 300:
                raise _error_from_body(response.status, raw.decode("utf-8", "replace"))
        result = orjson.loads(raw) if raw else {}
        return result if isinstance(result, dict) else {}

    async def list(
        self, rt: ResourceType, namespace: str | None = None, label_selector: str | None = None
    ) -> tuple[list[JsonObject], str]:
        """All objects of a type, and the list's resourceVersion to watch from."""
        query = {"labelSelector": label_selector} if label_selector else None
        result = await self.request("GET", rt.collection_path(namespace), query)
        items = [_with_type(rt, item) for item in result.get("items") or []]
        return items, str((result.get("metadata") or {}).get("resourceVersion", ""))

    async def watch(
        self,
        rt: ResourceType,
        resource_version: str,
        namespace: str | None = None,
        timeout_seconds: int = 300,
        label_selector: str | None = None,
    ) -> AsyncGenerator[JsonObject, None]:
        """Watch events ({"type", "object"}) from a resourceVersion, bookmarks included."""
        query = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        if resource_version:
            query["resourceVersion"] = resource_version
        if label_selector:
            query["labelSelector"] = label_selector
        timeout = aiohttp.ClientTimeout(total=None, sock_read=timeout_seconds + 30)
        response = await self._open(
            "GET", rt.collection_path(namespace), query, client_timeout=timeout
        )
        async with response:
            if not 200 <= response.status < 300:
                raise _error_from_body(response.status, await response.text())
            while True:
                line = await response.content.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    continue
                event = orjson.loads(line)
                obj = event.get("object")
                if isinstance(obj, dict) and event.get("type") not in ("ERROR", "BOOKMARK"):
                    event["object"] = _with_type(rt, obj)
                yield event

    async def get(self, rt: ResourceType, name: str, namespace: str | None = None) -> JsonObject:
        return _with_type(rt, await self.request("GET", rt.object_path(name, namespace)))

    async def create(self, rt: ResourceType, obj: JsonObject) -> JsonObject:
        namespace = (obj.get("metadata") or {}).get("namespace")
        return _with_type(rt, await self.request("POST", rt.collection_path(namespace), body=obj))

    async def replace(
        self, rt: ResourceType, obj: JsonObject, subresource: str | None = None
    ) -> JsonObject:
        """PUT the whole object; its resourceVersion makes this a compare-and-swap."""
        meta = obj.get("metadata") or {}
        path = rt.object_path(meta["name"], meta.get("namespace"), subresource)
        return _with_type(rt, await self.request("PUT", path, body=obj))

    async def patch(
        self,
        rt: ResourceType,
        name: str,
        namespace: str | None,
        patch: JsonObject,
        subresource: str | None = None,
    ) -> JsonObject:
        path = rt.object_path(name, namespace, subresource)
        result = await self.request(
            "PATCH", path, body=patch, content_type="application/merge-patch+json"
        )
        return _with_type(rt, result)

    async def delete(
        self, rt: ResourceType, name: str, namespace: str | None = None, background: bool = True
    ) -> None:
        body = {"propagationPolicy": "Background" if background else "Foreground"}
        await self.request("DELETE", rt.object_path(name, namespace), body=body)


def _with_type(rt: ResourceType, obj: JsonObject) -> JsonObject:
    """List items carry no apiVersion/kind; set them so every cached object is self-describing."""
    if obj.get("kind") != rt.kind or obj.get("apiVersion") != rt.api_version:
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
    return obj
