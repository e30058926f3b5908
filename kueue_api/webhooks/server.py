"""The webhook server: AdmissionReview over HTTPS, with a certificate it manages itself, and
beside the reviews the GET paths of an aggregated API (the agent's visibility API).

As Kueue's internal cert management (cert-controller) does: a CA and a serving certificate it
signs are kept in a Secret (so replicas share them), the CA goes into the webhook
configurations' `caBundle`, and both are renewed before they expire: the serving certificate
when 80% of its life has passed, the CA a year before its end (the bundle then carries the old
CA and the new one, so servers still on the old certificate are trusted meanwhile). The Secret
and the configurations are the caller's (`CertStore`); this module does the TLS and HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import json
import logging
import shutil
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from kueue_api.api_errors import forbidden, unauthorized
from kueue_api.certs import KeyPair, new_ca, new_serving
from kueue_api.webhooks.configurations import MUTATE_PATH, VALIDATE_PATH
from kueue_api.webhooks.mutation import ClusterView, Defaulting, mutate
from kueue_api.webhooks.review import Answer, Request, ReviewError, parse, response
from kueue_api.webhooks.validation import validate

log = logging.getLogger(__name__)

CA_VALIDITY = datetime.timedelta(days=3650)
CA_RENEW_BEFORE = datetime.timedelta(days=365)
SERVING_VALIDITY = datetime.timedelta(days=365)
# kube-apiserver sends objects of up to 3 MiB, twice (object and oldObject) on an update.
MAX_REVIEW_BYTES = 8 * 1024 * 1024
# How long stopping waits for reviews in flight. A decision is pure and takes milliseconds;
# what is still open after this is a request whose body never came, and the API server
# answers that one by its failurePolicy when its own timeout (10 s) passes. aiohttp's default,
# 60 s, held a manager replica's stepping down, and with it the next election, for a minute.
SHUTDOWN_SECONDS = 1.0

Handler = Callable[[Request], Answer]
ApiHandler = Callable[[str, Mapping[str, str]], Awaitable[tuple[int, Any]]]
"""An aggregated API's GET: (path below its prefix, query) -> (HTTP status, JSON body)."""


@dataclass(frozen=True)
class FrontProxy:
    """Who may call an aggregated API: kube-apiserver's front-proxy client
    (--proxy-client-cert-file), whose certificate the CA it publishes signs
    (`requestheader-client-ca-file` in ConfigMap kube-system/extension-apiserver-authentication)
    and whose name is one of `requestheader-allowed-names` (any name when that is empty).
    kube-apiserver has authenticated and authorized the user before it proxies; the check
    keeps everyone else from reaching the API past it."""

    ca_pem: bytes
    allowed_names: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Certificates:
    """What the server serves with and what clients trust (`bundle`: current CA, and the
    previous one while it is still valid)."""

    ca: KeyPair
    serving: KeyPair
    previous_ca: KeyPair | None = None

    @property
    def bundle(self) -> bytes:
        if self.previous_ca is None:
            return self.ca.cert_pem
        return self.ca.cert_pem + self.previous_ca.cert_pem

    def secret(self, name: str, namespace: str) -> dict[str, Any]:
        """The kubernetes.io/tls Secret the replicas share them in (`from_secret` reads it)."""
        data = {
            "ca.crt": self.ca.cert_pem,
            "ca.key": self.ca.key_pem,
            "tls.crt": self.serving.cert_pem,
            "tls.key": self.serving.key_pem,
        }
        if self.previous_ca is not None:
            data["ca-previous.crt"] = self.previous_ca.cert_pem
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "type": "kubernetes.io/tls",
            "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
        }

    @classmethod
    def from_secret(cls, data: Mapping[str, str] | None) -> Certificates | None:
        """What a Secret's `data` holds; None while it is empty (as deploy/ ships it)."""
        data = data or {}
        if not {"ca.crt", "ca.key", "tls.crt", "tls.key"} <= set(data):
            return None
        decoded = {key: base64.b64decode(value) for key, value in data.items()}
        previous = decoded.get("ca-previous.crt")
        return cls(
            KeyPair(decoded["ca.crt"], decoded["ca.key"]),
            KeyPair(decoded["tls.crt"], decoded["tls.key"]),
            KeyPair(previous, b"") if previous else None,
        )


def admission_handlers(view: ClusterView, defaulting: Defaulting) -> dict[str, Handler]:
    """The two paths the webhook configurations name, answered from `view` (the caller's
    caches of the cluster)."""

    def on_mutate(request: Request) -> Answer:
        return mutate(request, view, defaulting)

    def on_validate(request: Request) -> Answer:
        return validate(request, defaulting.frameworks, view, defaulting)

    return {MUTATE_PATH: on_mutate, VALIDATE_PATH: on_validate}


def _serving_due(serving: KeyPair, now: datetime.datetime) -> bool:
    life = serving.not_after - serving.not_before
    return now >= serving.not_before + life * 0.8


def renewed(
    current: Certificates | None, names: Sequence[str], now: datetime.datetime
) -> Certificates | None:
    """New certificates when `current` is missing, does not cover `names`, or is due for
    renewal; None when `current` serves on."""
    if current is not None and current.ca.not_after - now > CA_RENEW_BEFORE:
        covers = set(names) <= _names_of(current.serving)
        if covers and not _serving_due(current.serving, now):
            return None
        return Certificates(
            current.ca, new_serving(current.ca, names, now, SERVING_VALIDITY), current.previous_ca
        )
    ca = new_ca("mkq-webhook-ca", now, CA_VALIDITY)
    previous = current.ca if current is not None and current.ca.not_after > now else None
    return Certificates(ca, new_serving(ca, names, now, SERVING_VALIDITY), previous)


def _names_of(pair: KeyPair) -> set[str]:
    from cryptography import x509

    try:
        san = pair.certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return set()
    dns = san.value.get_values_for_type(x509.DNSName)
    ips = [str(ip) for ip in san.value.get_values_for_type(x509.IPAddress)]
    return set(dns) | set(ips)


class CertStore(Protocol):
    """Where the certificates live and who must trust them (the caller's cluster I/O)."""

    async def load(self) -> Certificates | None: ...

    async def save(self, certificates: Certificates) -> Certificates:
        """Store them (or return what another replica stored first)."""
        ...

    async def publish(self, bundle: bytes) -> None:
        """Write `bundle` into the webhook configurations' caBundle."""
        ...


class WebhookServer:
    """Serves `handlers` (path -> pure decision) on host:port over TLS, and `apis` (path
    prefix -> ApiHandler) to kube-apiserver's front proxy."""

    def __init__(
        self,
        handlers: Mapping[str, Handler],
        store: CertStore,
        *,
        host: str,
        port: int,
        names: Sequence[str],
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
        check_every: float = 3600.0,
        apis: Mapping[str, ApiHandler] | None = None,
        front_proxy: Callable[[], Awaitable[FrontProxy | None]] | None = None,
    ) -> None:
        """`apis` are served only to the caller `front_proxy` reads (None while unknown)."""
        self._handlers = dict(handlers)
        self._apis = dict(apis or {})
        self._load_front_proxy = front_proxy
        self._front_proxy: FrontProxy | None = None
        self._store = store
        self._host, self._port = host, port
        self._names = list(names)
        self._clock = clock
        self._check_every = check_every
        self._runner: web.AppRunner | None = None
        self._renewal: asyncio.Task[None] | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="mkq-webhook-"))
        self._ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.certificates: Certificates | None = None
        self.served = 0

    @property
    def port(self) -> int:
        return self._port

    async def start(self) -> None:
        self._dir.mkdir(mode=0o700, exist_ok=True)
        await self.renew()
        app = web.Application(client_max_size=MAX_REVIEW_BYTES)
        for path in self._handlers:
            app.router.add_post(path, self._serve)
        app.router.add_get("/healthz", self._healthz)
        for prefix in self._apis:
            app.router.add_get(prefix + "{path:(/.*)?}", self._serve_api)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_SECONDS)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port, ssl_context=self._ssl)
        await site.start()
        if self._port == 0:
            server = site._server
            assert server is not None
            sockets = getattr(server, "sockets", None) or []
            self._port = int(sockets[0].getsockname()[1])
        self._renewal = asyncio.create_task(self._renew_periodically(), name="webhook-certs")

    async def stop(self) -> None:
        if self._renewal is not None:
            self._renewal.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewal
            self._renewal = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._dir.exists():
            shutil.rmtree(self._dir, ignore_errors=True)

    async def renew(self) -> None:
        """Load, renew if due, store, serve with and publish the certificates."""
        current = await self._store.load()
        fresh = renewed(current, self._names, self._clock())
        if fresh is not None:
            current = await self._store.save(fresh)
        assert current is not None
        if current != self.certificates:
            cert, key = self._dir / "tls.crt", self._dir / "tls.key"
            cert.write_bytes(current.serving.cert_pem + current.ca.cert_pem)
            key.write_bytes(current.serving.key_pem)
            key.chmod(0o600)
            # Handshakes after this one use the new chain; open connections keep theirs.
            self._ssl.load_cert_chain(cert, key)
            self.certificates = current
        await self._store.publish(current.bundle)
        if self._load_front_proxy is not None:
            await self._trust_front_proxy(self._load_front_proxy)

    async def _trust_front_proxy(self, load: Callable[[], Awaitable[FrontProxy | None]]) -> None:
        """Ask for client certificates signed by the front proxy's CA (optional: kube-apiserver
        calls the webhooks without one)."""
        front = await load()
        if front is None:
            if self._front_proxy is None:
                log.warning(
                    "aggregated API: kube-apiserver's front-proxy CA is not known (ConfigMap "
                    "kube-system/extension-apiserver-authentication); every call is refused "
                    "until it is (checked again with the certificates)"
                )
            return
        if front != self._front_proxy:
            self._ssl.load_verify_locations(cadata=front.ca_pem.decode())
            self._ssl.verify_mode = ssl.CERT_OPTIONAL
            self._front_proxy = front

    async def _renew_periodically(self) -> None:
        while True:
            await asyncio.sleep(self._check_every)
            try:
                await self.renew()
            except Exception:
                log.exception("webhook certificates: renewal failed; retrying later")

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    def _caller_refused(self, http: web.Request) -> web.Response | None:
        """A Status unless the caller is the front proxy (see FrontProxy)."""
        front = self._front_proxy
        peer = http.transport.get_extra_info("peercert") if http.transport else None
        if front is None or not peer:
            error = unauthorized()
            return web.json_response(error.status(), status=error.code)
        names = {
            value for rdn in peer.get("subject", ()) for key, value in rdn if key == "commonName"
        }
        if front.allowed_names and not names & front.allowed_names:
            error = forbidden(f"client certificate {sorted(names)} is not an allowed front proxy")
            return web.json_response(error.status(), status=error.code)
        return None

    async def _serve_api(self, http: web.Request) -> web.Response:
        refused = self._caller_refused(http)
        if refused is not None:
            return refused
        path = http.match_info.get("path", "")
        prefix = http.path[: len(http.path) - len(path)] if path else http.path
        handler = self._apis[prefix]
        try:
            status, body = await handler(path, dict(http.query))
        except Exception:
            log.exception("aggregated API GET %s failed", http.path)
            return web.json_response({"error": "internal error"}, status=500)
        self.served += 1
        return web.json_response(body, status=status)

    async def _serve(self, http: web.Request) -> web.Response:
        handler = self._handlers[http.path]
        try:
            review = parse(json.loads(await http.read()))
        except (ValueError, ReviewError) as error:
            return web.json_response({"error": str(error)}, status=400)
        try:
            answer = handler(review)
        except Exception:
            log.exception("webhook %s failed on %s/%s", http.path, review.namespace, review.name)
            return web.json_response({"error": "internal error"}, status=500)
        self.served += 1
        return web.json_response(response(review.uid, answer))
