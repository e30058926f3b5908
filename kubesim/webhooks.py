"""Admission webhooks, called as kube-apiserver calls them
(k8s.io/apiserver/pkg/admission/plugin/webhook: mutating and validating dispatchers, request,
errors): an AdmissionReview v1 POSTed over HTTPS to `clientConfig.url` (or to the address a
`service` is mapped to, see Webhooks.services), the server's certificate verified against
`caBundle`, within `timeoutSeconds`; `failurePolicy` deciding what an unreachable or broken
webhook means; mutating webhooks one after the other, each JSONPatch applied and the object
defaulted again, IfNeeded webhooks reinvoked once; validating webhooks concurrently.

The answers and their messages are kube-apiserver's: a refusal is the webhook's Status with
`admission webhook "<name>" denied the request: <message>` (code 400 when it gives none); a
failed call under failurePolicy Fail is a 500 `Internal error occurred: failed calling webhook
"<name>": failed to call webhook: Post "<url>?timeout=<n>s": <why>`, with Go's words for why
where kubesim can tell (connection refused, context deadline exceeded, x509...).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import logging
import ssl
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import aiohttp

from kueue_api.api_errors import ApiError, bad_request

from . import jsoncodec
from .admission import Attributes
from .patches import json_patch
from .reviews import USER
from .store import Store
from .webhook_configs import KEYS, MUTATING_KEY, VALIDATING_KEY
from .webhook_matching import Hook, Invocation, invocation, parse

log = logging.getLogger("kubesim.webhooks")

Obj = dict[str, Any]
REVIEW_API_VERSION = "admission.k8s.io/v1"
NAMESPACES_KEY = "/namespaces"
NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")


class CallError(Exception):
    """A failed call (kube's ErrCallingWebhook): failurePolicy decides what it means. The text
    is what follows `failed calling webhook "<name>": ` in kube-apiserver's message."""


def internal_error(message: str) -> ApiError:
    """apierrors.NewInternalError, as kube-apiserver answers a webhook that failed closed."""
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def denied(hook: str, status: Any) -> ApiError:
    """webhookerrors.ToStatusErr: the webhook's Status, at least 400, its message prefixed."""
    result = status if isinstance(status, dict) else {}
    code = result.get("code") if isinstance(result.get("code"), int) else 0
    denied_by = f'admission webhook "{hook}" denied the request'
    if result.get("message"):
        message = f"{denied_by}: {result['message']}"
    elif result.get("reason"):
        message = f"{denied_by}: {result['reason']}"
    else:
        message = f"{denied_by} without explanation"
    details = result.get("details")
    return ApiError(
        max(int(code or 0), 400),
        str(result.get("reason") or ""),
        message,
        details if isinstance(details, dict) else {},
    )


class Webhooks:
    """The cluster's admission webhooks: the stored configurations, parsed once per change, and
    the one HTTP client session the cluster owns (close() when the cluster stops).

    `services` maps a `clientConfig.service` to the base URL that serves it, since kubesim runs
    no Service or Pod: "<namespace>/<name>:<port>" (or "<namespace>/<name>" for any port) ->
    "https://127.0.0.1:8443". The certificate is verified for `<name>.<namespace>.svc`, as
    kube-apiserver does."""

    def __init__(self, store: Store, services: Mapping[str, str] | None = None) -> None:
        self.store = store
        self.services: dict[str, str] = dict(services or {})
        self._session: aiohttp.ClientSession | None = None
        self._parsed: tuple[tuple[tuple[str, str], ...], tuple[Hook, ...]] = ((), ())
        self._contexts: dict[bytes, ssl.SSLContext] = {}

    def configured(self) -> bool:
        """Whether any webhook configuration exists: the one check every write pays."""
        holds = self.store.holds
        return holds(MUTATING_KEY) or holds(VALIDATING_KEY)

    def applies_to(self, resource_key: str) -> bool:
        """Webhooks are never called for webhook configurations (kube's exemption)."""
        return resource_key not in KEYS

    def for_request(self, user: Obj | None) -> RequestAdmission:
        """Admission for one request by `user` (None: the cluster's admin token)."""
        return RequestAdmission(self, user or USER)

    def hooks(self) -> tuple[Hook, ...]:
        configurations = [*self.store.items(MUTATING_KEY), *self.store.items(VALIDATING_KEY)]
        key = tuple(
            sorted(
                (str(c["metadata"].get("uid")), str(c["metadata"].get("resourceVersion")))
                for c in configurations
            )
        )
        if key != self._parsed[0]:
            self._parsed = (key, parse(configurations))
        return self._parsed[1]

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # ---- the HTTP call -----------------------------------------------------------------------

    def _target(self, hook: Hook) -> tuple[str, str, str | None]:
        """(the URL kube-apiserver would name, the URL kubesim connects to, TLS server name)."""
        client = hook.client
        if client.url is not None:
            return client.url, client.url, None
        assert client.service is not None
        namespace, name, port, path = client.service
        server_name = f"{name}.{namespace}.svc"
        shown = f"https://{server_name}:{port}{path}"
        base = self.services.get(f"{namespace}/{name}:{port}") or self.services.get(
            f"{namespace}/{name}"
        )
        if base is None:
            raise CallError(
                f'failed to call webhook: Post "{shown}?timeout={hook.timeout_seconds}s": '
                f'service "{name}" not found'
            )
        return shown, base.rstrip("/") + (path or "/"), server_name

    async def _ssl_context(self, ca_bundle: bytes) -> ssl.SSLContext:
        """The client context for a webhook's CA bundle, built once (off the event loop: with
        no bundle it reads the system's CAs)."""
        context = self._contexts.get(ca_bundle)
        if context is None:
            try:
                context = await asyncio.to_thread(
                    ssl.create_default_context, cadata=ca_bundle.decode() if ca_bundle else None
                )
            except (ssl.SSLError, ValueError) as error:
                raise CallError(
                    f"could not get REST client: unable to load root certificates: {error}"
                ) from error
            self._contexts[ca_bundle] = context
        return context

    def client_session(self) -> aiohttp.ClientSession:
        """The cluster's one HTTP client session (webhook calls, aggregated API requests)."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0), trust_env=False
            )
        return self._session

    async def post(self, hook: Hook, review: Obj) -> Any:
        """POST the review; the decoded answer, or CallError with Go's words for the failure."""
        shown, url, server_name = self._target(hook)
        query = f"?timeout={hook.timeout_seconds}s"
        context = await self._ssl_context(hook.client.ca_bundle)
        prefix = f'failed to call webhook: Post "{shown}{query}": '
        try:
            async with asyncio.timeout(hook.timeout_seconds):
                async with self.client_session().post(
                    url + query,
                    data=jsoncodec.dumps(review),
                    headers={"Content-Type": "application/json", "Accept": "application/json"},
                    ssl=context,
                    server_hostname=server_name,
                    allow_redirects=False,
                ) as response:
                    raw = await response.read()
                    status = response.status
                    content_type = response.content_type
        except TimeoutError as error:
            raise CallError(prefix + "context deadline exceeded") from error
        except aiohttp.ClientConnectorCertificateError as error:
            raise CallError(prefix + _certificate_error(error, server_name)) from error
        except aiohttp.ClientConnectorSSLError as error:
            raise CallError(prefix + f"tls: {error.strerror or error}") from error
        except aiohttp.ClientConnectorError as error:
            raise CallError(prefix + _dial_error(error)) from error
        except aiohttp.ServerDisconnectedError as error:
            raise CallError(prefix + "EOF") from error
        except aiohttp.ClientError as error:
            raise CallError(prefix + str(error)) from error
        if not 200 <= status < 300:
            raise CallError("failed to call webhook: " + _status_error(status, raw, content_type))
        try:
            return jsoncodec.loads(raw)
        except ValueError as error:
            raise CallError(
                f"failed to call webhook: couldn't get version/kind; json parse error: {error}"
            ) from error


def _certificate_error(
    error: aiohttp.ClientConnectorCertificateError, server_name: str | None
) -> str:
    cause = error.certificate_error
    code = getattr(cause, "verify_code", None)
    if code in (62, 64):  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
        # Go lists the names the certificate is valid for; kubesim names the one it is not
        reason = f"certificate is not valid for {server_name or error.host}"
    elif code in (9, 10):  # not yet valid, expired
        reason = "certificate has expired or is not yet valid"
    else:
        reason = "certificate signed by unknown authority"
    return f"tls: failed to verify certificate: x509: {reason}"


def _dial_error(error: aiohttp.ClientConnectorError) -> str:
    if isinstance(error, aiohttp.ClientConnectorDNSError):
        return f"dial tcp: lookup {error.host}: no such host"
    os_error = error.os_error
    if os_error.errno == errno.ECONNREFUSED:
        why = "connection refused"
    else:
        why = (os_error.strerror or str(os_error)).lower()
    return f"dial tcp {error.host}:{error.port}: connect: {why}"


_GENERIC_MESSAGES = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be "
    "processing the request",
}


def _status_error(code: int, raw: bytes, content_type: str) -> str:
    """What client-go makes of a non-2xx answer: its Status message, or a generic one."""
    try:
        body = jsoncodec.loads(raw) if raw else None
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status" and body.get("message"):
        return str(body["message"])
    text = raw.decode("utf-8", "replace").strip() if content_type.startswith("text/") else ""
    if code in (403, 406, 415):
        return text or "unknown"
    if code in _GENERIC_MESSAGES:
        return _GENERIC_MESSAGES[code]
    if code >= 500:
        quoted = jsoncodec.dumps(text or "unknown").decode()
        return f"an error on the server ({quoted}) has prevented the request from succeeding"
    return f"the server responded with the status code {code} but did not return more information"


# ---- one request ---------------------------------------------------------------------------


def _at_version(obj: Obj | None, attributes: Attributes, version: str) -> Obj | None:
    if obj is None:
        return None
    wanted = attributes.resource_type.api_version(version)
    return obj if obj.get("apiVersion") == wanted else {**obj, "apiVersion": wanted}


def _group_version_kind(attributes: Attributes, version: str) -> Obj:
    rt = attributes.resource_type
    return {"group": rt.group, "version": version, "kind": rt.kind}


def _group_version_resource(attributes: Attributes, version: str) -> Obj:
    rt = attributes.resource_type
    return {"group": rt.group, "version": version, "resource": rt.plural}


def review(uid: str, call: Invocation, attributes: Attributes, user: Obj) -> Obj:
    """The AdmissionReview v1 request kube-apiserver sends (CreateV1AdmissionReview)."""
    version = call.version
    request: Obj = {
        "uid": uid,
        "kind": _group_version_kind(attributes, version),
        "resource": _group_version_resource(attributes, version),
    }
    if attributes.subresource:
        request["subResource"] = attributes.subresource
    request["requestKind"] = _group_version_kind(attributes, attributes.version)
    request["requestResource"] = _group_version_resource(attributes, attributes.version)
    if attributes.subresource:
        request["requestSubResource"] = attributes.subresource
    if attributes.name:
        request["name"] = attributes.name
    if attributes.namespace:
        request["namespace"] = attributes.namespace
    request["operation"] = attributes.operation
    request["userInfo"] = {
        k: user[k] for k in ("username", "uid", "groups", "extra") if user.get(k)
    }
    request["object"] = _at_version(attributes.obj, attributes, version)
    request["oldObject"] = _at_version(attributes.old, attributes, version)
    request["dryRun"] = attributes.dry_run
    request["options"] = attributes.options
    return {"kind": "AdmissionReview", "apiVersion": REVIEW_API_VERSION, "request": request}


def verify(uid: str, mutating: bool, answer: Any) -> Obj:
    """The response of an answer (VerifyAdmissionResponse), or CallError."""
    if not isinstance(answer, dict):
        raise CallError("received invalid webhook response: webhook response was absent")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise CallError("received invalid webhook response: webhook response was absent")
    if response.get("uid") != uid:
        raise CallError(
            f'received invalid webhook response: expected response.uid="{uid}", '
            f'got "{response.get("uid") or ""}"'
        )
    if answer.get("apiVersion") != REVIEW_API_VERSION or answer.get("kind") != "AdmissionReview":
        group, _, version = str(answer.get("apiVersion") or "").rpartition("/")
        raise CallError(
            "received invalid webhook response: expected webhook response of "
            f"admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{version}, "
            f"Kind={answer.get('kind') or ''}"
        )
    patch, patch_type = response.get("patch"), response.get("patchType")
    if mutating:
        if patch and patch_type is None:
            raise CallError(
                "received invalid webhook response: webhook returned response.patch but not "
                "response.patchType"
            )
        if not patch and patch_type is not None:
            raise CallError(
                "received invalid webhook response: webhook returned response.patchType but not "
                "response.patch"
            )
        if patch_type == "":
            raise CallError(
                "received invalid webhook response: webhook returned invalid response.patchType "
                'of ""'
            )
    elif patch:
        raise CallError(
            "received invalid webhook response: validating webhook may not return response.patch"
        )
    elif patch_type is not None:
        raise CallError(
            "received invalid webhook response: validating webhook may not return "
            "response.patchType"
        )
    return response


def _decoded_patch(response: Obj) -> list[Any]:
    try:
        operations = jsoncodec.loads(base64.b64decode(str(response["patch"]), validate=True))
    except (binascii.Error, ValueError) as error:
        raise CallError(f"received undecodable patch in webhook response: {error}") from error
    if not isinstance(operations, list):
        raise CallError(
            "received undecodable patch in webhook response: json: cannot unmarshal object into "
            "Go value of type jsonpatch.Patch"
        )
    return operations


def _missing(document: Any, pointer: str) -> tuple[bool, bool]:
    """(whether the parent of `pointer` is missing, whether its last key is: a map's key;
    list indexes are left to kubesim's own words)."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    value = document
    for token in tokens[:-1]:
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return True, True
    last = tokens[-1] if tokens else ""
    if isinstance(value, dict):
        return False, last not in value
    return not isinstance(value, list), False


def _go_patch_error(operation: Any, document: Any, fallback: str) -> str:
    """evanphx/json-patch's words for the common failures (a path whose parent is missing,
    a replace of a missing key); kubesim's own for the rest."""
    op = operation.get("op") if isinstance(operation, dict) else None
    path = str(operation.get("path", "")) if isinstance(operation, dict) else ""
    if op not in ("add", "remove", "replace") or not path:
        return fallback
    parent_missing, key_missing = _missing(document, path)
    shown = path if op == "replace" else f'"{path}"'
    if parent_missing:
        return f"{op} operation does not apply: doc is missing path: {shown}: missing value"
    if op == "replace" and key_missing:
        return f"replace operation does not apply: doc is missing key: {path}: missing value"
    if op == "remove" and key_missing:
        key = path.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        return (
            f"error in remove for path: '{path}': Unable to remove nonexistent key: {key}: "
            "missing value"
        )
    return fallback


def _apply_patch(obj: Obj, operations: list[Any]) -> Any:
    """A webhook's JSONPatch applied; a patch that does not apply is an internal error (not a
    failed call: failurePolicy does not excuse it)."""
    document: Any = obj
    for operation in operations:
        try:
            document = json_patch(document, [operation])
        except ApiError as error:
            raise internal_error(_go_patch_error(operation, document, error.message)) from None
    return document


class RequestAdmission:
    """The webhooks of one request, by one user; `warnings` gathers the webhooks' warnings."""

    def __init__(self, webhooks: Webhooks, user: Obj) -> None:
        self.webhooks = webhooks
        self.user = user
        self.warnings: list[str] = []

    def _namespace(self, attributes: Attributes) -> Obj | None:
        if not attributes.namespace:
            return None
        return self.webhooks.store.get(NAMESPACES_KEY, "", attributes.namespace)

    def _invocations(
        self, hooks: Iterable[Hook], attributes: Attributes, mutating: bool
    ) -> list[Invocation]:
        if not self.webhooks.applies_to(attributes.resource_type.key):
            return []
        namespace = self._namespace(attributes)
        found = []
        for hook in hooks:
            if hook.mutating != mutating:
                continue
            call = invocation(hook, attributes, namespace)
            if call is not None:
                found.append(call)
        return found

    async def _call(self, call: Invocation, attributes: Attributes) -> Obj | None:
        """The webhook's response, None when it failed open; raises to refuse the request."""
        hook = call.hook
        if attributes.dry_run and hook.side_effects not in NO_SIDE_EFFECTS:
            raise bad_request(f'admission webhook "{hook.name}" does not support dry run')
        uid = str(uuid.uuid4())
        try:
            if "v1" not in hook.review_versions:
                raise CallError(
                    "could not create admission objects: kubesim sends only admission.k8s.io/v1 "
                    "AdmissionReviews"
                )
            answer = await self.webhooks.post(hook, review(uid, call, attributes, self.user))
            response = verify(uid, hook.mutating, answer)
        except CallError as error:
            message = f'failed calling webhook "{hook.name}": {error}'
            if hook.ignore_failures:
                log.warning("Failed calling webhook, failing open %s: %s", hook.name, message)
                return None
            raise internal_error(message) from None
        self.warnings.extend(str(w) for w in response.get("warnings") or [])
        if not response.get("allowed"):
            raise denied(hook.name, response.get("status"))
        return response

    async def _patched(self, call: Invocation, attributes: Attributes) -> Obj:
        """The object after one mutating webhook (unchanged when it failed open)."""
        obj = attributes.obj
        assert obj is not None
        try:
            response = await self._call(call, attributes)
            if response is None or not response.get("patch"):
                return obj
            operations = _decoded_patch(response)
            if response.get("patchType") != "JSONPatch":
                raise CallError(f'unsupported patch type "{response.get("patchType")}"')
        except CallError as error:
            # after a successful call, a bad patch is a failed call too
            if call.hook.ignore_failures:
                return obj
            raise internal_error(f'failed calling webhook "{call.hook.name}": {error}') from None
        if not operations:
            return obj
        patched = _apply_patch(_at_version(obj, attributes, call.version) or obj, operations)
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise internal_error("the patched object is not a valid object")
        patched = _at_version(patched, attributes, attributes.version) or patched
        if attributes.defaults is not None:
            attributes.defaults(patched)
        return patched

    async def mutate(self, attributes: Attributes) -> Obj:
        obj = attributes.obj
        assert obj is not None
        hooks = self.webhooks.hooks()
        invoked_reinvocable: list[Hook] = []
        reinvoke: list[Hook] = []
        for hook in hooks:
            if not hook.mutating:
                continue
            current = attributes.with_object(obj)
            calls = self._invocations((hook,), current, mutating=True)
            if not calls:
                continue
            patched = await self._patched(calls[0], current)
            if patched != obj:
                reinvoke = list(invoked_reinvocable)
                obj = patched
            if hook.reinvoke:
                invoked_reinvocable.append(hook)
        # reinvocationPolicy IfNeeded: once more, each such webhook that ran before the object
        # last changed (kube-apiserver also reinvokes its in-tree plugins; kubesim has none).
        for hook in reinvoke:
            current = attributes.with_object(obj)
            calls = self._invocations((hook,), current, mutating=True)
            if calls:
                obj = await self._patched(calls[0], current)
        return obj

    async def validate(self, attributes: Attributes) -> None:
        calls = self._invocations(self.webhooks.hooks(), attributes, mutating=False)
        if not calls:
            return
        results = await asyncio.gather(
            *(self._call(call, attributes) for call in calls), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result
