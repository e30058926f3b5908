"""kube-apiserver's aggregation layer: a request for a group/version that an APIService hands to
a Service is proxied there (k8s.io/kube-aggregator, pkg/apiserver/handler_proxy.go).

As kube-apiserver does it: the Service is resolved as its ResolveCluster does (an ExternalName
is reached at that name and the APIService's port; other Services where
`Webhooks.services` says they are served, since kubesim runs no Service), the server's
certificate is verified for `<service>.<namespace>.svc` against the APIService's caBundle
(unless insecureSkipTLSVerify), and the request carries the front proxy's client certificate
with the caller in X-Remote-User and X-Remote-Group. The front proxy's CA and name are
published in kube-system/extension-apiserver-authentication, where aggregated servers read
them. The caller's own credentials are not passed on.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from kueue_api.api_errors import ApiError
from kueue_api.certs import KeyPair, new_ca, new_client

from .store import Store
from .webhooks import Webhooks

Obj = dict[str, Any]

API_SERVICE_KEY = "apiregistration.k8s.io/apiservices"
SERVICE_KEY = "/services"
FRONT_PROXY_CLIENT = "front-proxy-client"
AUTHENTICATION_CONFIG_MAP = "extension-apiserver-authentication"
VALIDITY = datetime.timedelta(days=30)
# kube-apiserver's own deadline for a request (--request-timeout).
REQUEST_SECONDS = 60.0
# Hop-by-hop and identity headers never passed either way.
_DROPPED = frozenset(
    {"authorization", "connection", "host", "keep-alive", "transfer-encoding", "content-length"}
)


def _unavailable(message: str) -> ApiError:
    return ApiError(503, "ServiceUnavailable", message)


@dataclass(frozen=True)
class FrontProxy:
    """The front proxy's CA and the client certificate it signed, written in a directory
    (ssl loads a certificate chain from files)."""

    ca: KeyPair
    cert_path: Path
    key_path: Path

    @classmethod
    def create(cls, directory: Path) -> FrontProxy:
        """A new identity in `directory` (file I/O: off the event loop)."""
        now = datetime.datetime.now(datetime.UTC)
        ca = new_ca("kubesim-front-proxy-ca", now, VALIDITY)
        client = new_client(ca, FRONT_PROXY_CLIENT, now, VALIDITY)
        cert_path, key_path = directory / "front-proxy-client.crt", directory / "front-proxy.key"
        cert_path.write_bytes(client.cert_pem)
        key_path.write_bytes(client.key_pem)
        key_path.chmod(0o600)
        return cls(ca, cert_path, key_path)


class Aggregator:
    """Proxies aggregated group/versions."""

    def __init__(self, store: Store, webhooks: Webhooks, identity: FrontProxy) -> None:
        self.store = store
        # Where Services are served (kubesim runs none), and the HTTP session, are the webhook
        # client's: one of each per cluster.
        self.webhooks = webhooks
        self.identity = identity
        self._contexts: dict[tuple[bytes, bool], ssl.SSLContext] = {}

    def authentication_config_map(self) -> Obj:
        """kube-system/extension-apiserver-authentication as kube-apiserver publishes it."""
        return {
            "metadata": {"name": AUTHENTICATION_CONFIG_MAP, "namespace": "kube-system"},
            "data": {
                "requestheader-allowed-names": json.dumps([FRONT_PROXY_CLIENT]),
                "requestheader-client-ca-file": self.identity.ca.cert_pem.decode(),
                "requestheader-extra-headers-prefix": json.dumps(["X-Remote-Extra-"]),
                "requestheader-group-headers": json.dumps(["X-Remote-Group"]),
                "requestheader-username-headers": json.dumps(["X-Remote-User"]),
            },
        }

    def api_service(self, group: str, version: str) -> Obj | None:
        """The APIService that hands group/version to a Service, if one does."""
        found = self.store.get(API_SERVICE_KEY, "", f"{version}.{group}")
        if found is None or not (found.get("spec") or {}).get("service"):
            return None
        return found

    def _base_url(self, api_service: Obj) -> tuple[str, str]:
        """(base URL to connect to, TLS server name), as kube-apiserver resolves the Service."""
        reference = api_service["spec"]["service"]
        namespace, name = reference.get("namespace", ""), reference.get("name", "")
        port = int(reference.get("port") or 443)
        server_name = f"{name}.{namespace}.svc"
        service = self.store.get(SERVICE_KEY, namespace, name)
        if service is None:
            raise _unavailable(f'service "{name}" not found')
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName":
            host = str(spec.get("externalName") or "").rstrip(".")
            return f"https://{host}:{port}", server_name
        services = self.webhooks.services
        served = services.get(f"{namespace}/{name}:{port}") or services.get(f"{namespace}/{name}")
        if served is None:
            raise _unavailable(f'no endpoints available for service "{name}"')
        return served.rstrip("/"), server_name

    async def _ssl_context(self, ca_bundle: bytes, skip_verify: bool) -> ssl.SSLContext:
        """The client context for an APIService's CA bundle, built once (off the event loop:
        it reads the system's CAs and the proxy identity's files)."""
        context = self._contexts.get((ca_bundle, skip_verify))
        if context is None:
            context = await asyncio.to_thread(self._new_ssl_context, ca_bundle, skip_verify)
            self._contexts[(ca_bundle, skip_verify)] = context
        return context

    def _new_ssl_context(self, ca_bundle: bytes, skip_verify: bool) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if skip_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif ca_bundle:
            context.load_verify_locations(cadata=ca_bundle.decode())
        context.load_cert_chain(self.identity.cert_path, self.identity.key_path)
        return context

    async def proxy(
        self, request: web.BaseRequest, api_service: Obj, user: Mapping[str, Any]
    ) -> web.Response:
        """The aggregated server's answer to `request`, on behalf of `user`."""
        base, server_name = self._base_url(api_service)
        spec = api_service["spec"]
        bundle = base64.b64decode(spec.get("caBundle") or "")
        context = await self._ssl_context(bundle, bool(spec.get("insecureSkipTLSVerify")))
        # The caller's identity headers are kube-apiserver's to set, never the caller's.
        forwarded: CIMultiDict[str] = CIMultiDict(
            (k, v)
            for k, v in request.headers.items()
            if k.lower() not in _DROPPED and not k.lower().startswith("x-remote-")
        )
        forwarded["X-Remote-User"] = str(user.get("username", ""))
        for group in user.get("groups") or []:
            forwarded.add("X-Remote-Group", str(group))
        body = await request.read()
        try:
            async with asyncio.timeout(REQUEST_SECONDS):
                async with self.webhooks.client_session().request(
                    request.method,
                    base + request.path_qs,
                    data=body or None,
                    headers=forwarded,
                    ssl=context,
                    server_hostname=None if spec.get("insecureSkipTLSVerify") else server_name,
                    allow_redirects=False,
                ) as response:
                    raw = await response.read()
                    answer_headers = {
                        k: v for k, v in response.headers.items() if k.lower() not in _DROPPED
                    }
                    return web.Response(status=response.status, body=raw, headers=answer_headers)
        except TimeoutError:
            raise _unavailable("the server was unable to return a response in time") from None
        except (aiohttp.ClientError, ssl.SSLError, OSError) as error:
            raise _unavailable(f"error trying to reach service: {error}") from None
