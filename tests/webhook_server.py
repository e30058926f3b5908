"""An admission webhook server for tests: AdmissionReview v1 over TLS on a loopback port, with
a throwaway CA (the `caBundle` of the configurations), each path answered by a handler the test
chooses, and every request it got recorded.

Both kubesim and a real kube-apiserver (a process on this machine) call it at
`https://127.0.0.1:PORT/<path>`, so one scenario runs against both.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import inspect
import ipaddress
import json
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

Obj = dict[str, Any]
Handler = Callable[[Obj], Obj | Awaitable[Obj]]
"""An AdmissionRequest -> the response's fields (allowed, status, patch as a list of
operations, warnings...); the server adds uid, patchType and the review around them."""

ADMISSION_REGISTRATION = "/apis/admissionregistration.k8s.io/v1"
MUTATING = f"{ADMISSION_REGISTRATION}/mutatingwebhookconfigurations"
VALIDATING = f"{ADMISSION_REGISTRATION}/validatingwebhookconfigurations"


@dataclass(frozen=True)
class WebhookPki:
    """A CA and a serving certificate (127.0.0.1, localhost and `dns_names`) it signed."""

    ca_pem: bytes
    cert_path: Path
    key_path: Path

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca_pem).decode()


def make_pki(
    directory: Path, dns_names: Sequence[str] = (), ca_name_text: str = "webhook-test-ca"
) -> WebhookPki:
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name_text)])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.DNSName("localhost"),
        *(x509.DNSName(name) for name in dns_names),
    ]
    serving = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = directory / "webhook.crt", directory / "webhook.key"
    cert_path.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return WebhookPki(ca.public_bytes(serialization.Encoding.PEM), cert_path, key_path)


# ---- handlers ------------------------------------------------------------------------------


def allow(warnings: Sequence[str] = ()) -> Handler:
    def handle(request: Obj) -> Obj:
        return {"allowed": True, **({"warnings": list(warnings)} if warnings else {})}

    return handle


def deny(message: str = "", code: int | None = None, reason: str = "") -> Handler:
    status: Obj = {}
    if message:
        status["message"] = message
    if code is not None:
        status["code"] = code
    if reason:
        status["reason"] = reason

    def handle(request: Obj) -> Obj:
        return {"allowed": False, "status": status}

    return handle


def patch(operations: list[Obj] | Callable[[Obj], list[Obj]]) -> Handler:
    """Allow, with a JSONPatch (a list, or a function of the request that returns one)."""

    def handle(request: Obj) -> Obj:
        ops = operations(request) if callable(operations) else operations
        return {"allowed": True, "patch": ops}

    return handle


def http_error(status: int, text: str) -> Handler:
    """Answer with an HTTP error and a plain-text body instead of an AdmissionReview."""

    def handle(request: Obj) -> web.Response:
        return web.Response(status=status, text=text)

    return handle  # type: ignore[return-value]


def slow(seconds: float, then: Handler | None = None) -> Handler:
    async def handle(request: Obj) -> Obj:
        await asyncio.sleep(seconds)
        answer = (then or allow())(request)
        return await answer if inspect.isawaitable(answer) else answer

    return handle


class WebhookServer:
    """The server; `route(path, handler)` decides how a path answers (404 until routed)."""

    def __init__(self, pki: WebhookPki) -> None:
        self.pki = pki
        self.handlers: dict[str, Handler] = {}
        self.requests: dict[str, list[Obj]] = {}
        self.queries: dict[str, list[str]] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def ca_bundle(self) -> str:
        return self.pki.ca_bundle

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def route(self, path: str, handler: Handler) -> str:
        """Answer `path` with `handler`; its URL."""
        self.handlers[path] = handler
        return self.url(path)

    def calls(self, path: str) -> list[Obj]:
        """The AdmissionRequests `path` got, oldest first."""
        return self.requests.get(path, [])

    async def _handle(self, request: web.Request) -> web.Response:
        handler = self.handlers.get(request.path)
        if handler is None:
            return web.Response(status=404, text="no such webhook")
        review = await request.json()
        admission = review["request"]
        self.requests.setdefault(request.path, []).append(admission)
        self.queries.setdefault(request.path, []).append(request.query_string)
        answer = handler(admission)
        fields = await answer if inspect.isawaitable(answer) else answer
        if isinstance(fields, web.Response):
            return fields
        response: Obj = {"uid": admission["uid"], **fields}
        if "patch" in fields:
            response["patch"] = base64.b64encode(json.dumps(fields["patch"]).encode()).decode()
            response["patchType"] = "JSONPatch"
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    async def start(self) -> WebhookServer:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.pki.cert_path, self.pki.key_path)
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def webhook(
    name: str,
    url: str,
    ca_bundle: str,
    *,
    resources: Sequence[str] = ("configmaps",),
    groups: Sequence[str] = ("",),
    versions: Sequence[str] = ("v1",),
    operations: Sequence[str] = ("CREATE",),
    **fields: Any,
) -> Obj:
    """One webhook of a configuration: one rule, sideEffects None, AdmissionReview v1; any
    other field (namespaceSelector, failurePolicy, timeoutSeconds...) as keyword."""
    return {
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [
            {
                "apiGroups": list(groups),
                "apiVersions": list(versions),
                "operations": list(operations),
                "resources": list(resources),
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **fields,
    }


def configuration(kind: str, name: str, webhooks: Sequence[Obj]) -> Obj:
    """A Mutating- or ValidatingWebhookConfiguration (`kind` "Mutating" or "Validating")."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": f"{kind}WebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": list(webhooks),
    }


def in_namespace(namespace: str) -> Obj:
    """A namespaceSelector for one namespace (kube-apiserver labels every namespace with its
    name), so tests sharing a cluster never see each other's webhooks."""
    return {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
