"""ServiceAccount tokens: TokenRequest (`kubectl create token`), authentication of the tokens
kubesim issued, and the token controller that fills `kubernetes.io/service-account-token`
Secrets. Tokens are JWTs with kube-apiserver's claims (sub, aud, exp, kubernetes.io), signed
with a per-cluster HMAC key: clients only read them, kubesim alone verifies them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from kueue_api.api_errors import ApiError, bad_request
from kueue_api.timestamps import rfc3339

from .api import Api
from .reconciler import Reconciler
from .store import DELETED, Event

Obj = dict[str, Any]
ISSUER = "https://kubernetes.default.svc.cluster.local"
SA_KEY = "/serviceaccounts"
SECRET_KEY = "/secrets"
SA_TOKEN_TYPE = "kubernetes.io/service-account-token"
SA_NAME = "kubernetes.io/service-account.name"
SA_UID = "kubernetes.io/service-account.uid"
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenIssuer:
    """Signs and verifies the cluster's ServiceAccount tokens."""

    def __init__(self, api: Api, key: bytes | None = None) -> None:
        self.api = api
        self.key = key or secrets.token_bytes(32)

    def issue(self, sa: Obj, expiration: int | None, audiences: list[str]) -> tuple[str, int]:
        """A token for `sa`; `expiration` None means a legacy (Secret) token without exp."""
        meta = sa["metadata"]
        now = int(time.time())
        claims: Obj = {
            "aud": audiences or [ISSUER],
            "iat": now,
            "iss": ISSUER,
            "jti": secrets.token_hex(16),
            "kubernetes.io": {
                "namespace": meta["namespace"],
                "serviceaccount": {"name": meta["name"], "uid": meta["uid"]},
            },
            "nbf": now,
            "sub": f"system:serviceaccount:{meta['namespace']}:{meta['name']}",
        }
        if expiration is not None:
            claims["exp"] = now + expiration
        header = _b64(json.dumps({"alg": "HS256", "kid": "kubesim"}).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        signature = hmac.new(self.key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64(signature)}", now + (expiration or 0)

    def user(self, token: str) -> Obj | None:
        """The user a token authenticates, or None (bad signature, expired, SA gone)."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        expected = hmac.new(self.key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(expected, _unb64(parts[2])):
                return None
            claims = json.loads(_unb64(parts[1]))
        except ValueError:
            return None
        if "exp" in claims and claims["exp"] < time.time():
            return None
        account = claims["kubernetes.io"]
        namespace, name = account["namespace"], account["serviceaccount"]["name"]
        sa = self.api.store.get(SA_KEY, namespace, name)
        if sa is None or sa["metadata"]["uid"] != account["serviceaccount"]["uid"]:
            return None
        return {
            "username": claims["sub"],
            "uid": sa["metadata"]["uid"],
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{namespace}",
                "system:authenticated",
            ],
        }

    def token_request(self, namespace: str, name: str, body: Any) -> Obj:
        """POST serviceaccounts/NAME/token: a TokenRequest with status.token filled."""
        if not isinstance(body, dict):
            raise bad_request("a TokenRequest body is required")
        sa = self.api.get(self.api.type_for(SA_KEY), namespace, name)
        spec = dict(body.get("spec") or {})
        expiration = int(spec.get("expirationSeconds") or DEFAULT_EXPIRATION)
        if expiration < MIN_EXPIRATION:
            raise ApiError(
                422,
                "Invalid",
                f'TokenRequest.authentication.k8s.io "{name}" is invalid: spec.expirationSeconds: '
                "Invalid value: "
                f"{expiration}: may not specify a duration less than 10 minutes",
            )
        spec["expirationSeconds"] = expiration
        spec.setdefault("audiences", [ISSUER])
        token, expires = self.issue(sa, expiration, list(spec["audiences"]))
        meta = dict(body.get("metadata") or {})
        meta.update({"name": name, "namespace": namespace})
        meta.setdefault("creationTimestamp", None)
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": meta,
            "spec": spec,
            "status": {
                "token": token,
                "expirationTimestamp": rfc3339(datetime.fromtimestamp(expires, UTC)),
            },
        }


class TokenController(Reconciler):
    """Fills ServiceAccount token Secrets (token, ca.crt, namespace), as kube-controller-
    manager's token controller does; the Secret names its account by annotation."""

    name = "token-controller"

    def __init__(self, api: Api, issuer: TokenIssuer, ca_pem: str) -> None:
        super().__init__(api)
        self.issuer = issuer
        self.ca_pem = ca_pem

    def keys_for(self, event: Event) -> Iterable[str]:
        if event.type == DELETED:
            return
        if event.key == SECRET_KEY and event.obj.get("type") == SA_TOKEN_TYPE:
            meta = event.obj["metadata"]
            yield f"{meta['namespace']}/{meta['name']}"
        elif event.key == SA_KEY:
            namespace = event.obj["metadata"]["namespace"]
            for secret in self.api.store.items(SECRET_KEY, namespace):
                if secret.get("type") == SA_TOKEN_TYPE:
                    yield f"{namespace}/{secret['metadata']['name']}"

    def initial_keys(self) -> Iterable[str]:
        for secret in self.api.store.items(SECRET_KEY):
            if secret.get("type") == SA_TOKEN_TYPE:
                yield f"{secret['metadata']['namespace']}/{secret['metadata']['name']}"

    def reconcile(self, key: str) -> None:
        namespace, name = key.split("/", 1)
        secret = self.api.store.get(SECRET_KEY, namespace, name)
        if secret is None or secret["metadata"].get("deletionTimestamp"):
            return
        annotations = secret["metadata"].get("annotations") or {}
        sa = self.api.store.get(SA_KEY, namespace, str(annotations.get(SA_NAME, "")))
        if sa is None or (secret.get("data") or {}).get("token"):
            return
        token, _ = self.issuer.issue(sa, None, [])
        encoded = {
            "token": token,
            "ca.crt": self.ca_pem,
            "namespace": namespace,
        }

        def fill(obj: Obj) -> None:
            obj["metadata"].setdefault("annotations", {})[SA_UID] = sa["metadata"]["uid"]
            data = obj.setdefault("data", {}) or {}
            obj["data"] = data
            for field, value in encoded.items():
                data[field] = base64.b64encode(value.encode()).decode()

        try:
            self.api.mutate(SECRET_KEY, namespace, name, fill)
        except ApiError as error:
            if error.code not in (404, 409):
                raise
