"""AdmissionReview v1 in and out (k8s.io/api/admission/v1), and the JSON Patch a mutation is.

Answers follow controller-runtime's webhook package, as Kueue's webhooks use it: a mutation is
`allowed` with a JSONPatch from the object as sent to the object as defaulted; a refusal is
`allowed: false` with a Status of code 403 and the reasons, which kube-apiserver shows as
`admission webhook "<name>" denied the request: <message>`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

JsonObject = dict[str, Any]

API_VERSION = "admission.k8s.io/v1"


class ReviewError(ValueError):
    """The body is not an AdmissionReview v1 request."""


@dataclass(frozen=True)
class Request:
    uid: str
    kind: Mapping[str, str]
    resource: Mapping[str, str]
    sub_resource: str
    namespace: str
    name: str
    operation: str
    obj: JsonObject | None
    old_obj: JsonObject | None
    dry_run: bool

    @property
    def group_kind(self) -> tuple[str, str]:
        return str(self.kind.get("group") or ""), str(self.kind.get("kind") or "")


def parse(body: object) -> Request:
    if not isinstance(body, dict) or body.get("kind") != "AdmissionReview":
        raise ReviewError("not an AdmissionReview")
    if body.get("apiVersion") != API_VERSION:
        raise ReviewError(f"apiVersion {body.get('apiVersion')!r}: only {API_VERSION} is served")
    request = body.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise ReviewError("request.uid is missing")
    obj, old = request.get("object"), request.get("oldObject")
    return Request(
        uid=request["uid"],
        kind=dict(request.get("kind") or {}),
        resource=dict(request.get("resource") or {}),
        sub_resource=str(request.get("subResource") or ""),
        namespace=str(request.get("namespace") or ""),
        name=str(request.get("name") or ""),
        operation=str(request.get("operation") or ""),
        obj=obj if isinstance(obj, dict) else None,
        old_obj=old if isinstance(old, dict) else None,
        dry_run=bool(request.get("dryRun")),
    )


@dataclass(frozen=True)
class Answer:
    """What a webhook decided: allowed (with a patch, maybe) or denied with a message."""

    allowed: bool
    patch: Sequence[JsonObject] = ()
    message: str = ""
    code: int = 403
    reason: str = "Forbidden"
    warnings: Sequence[str] = field(default_factory=tuple)


def allow(patch: Sequence[JsonObject] = (), warnings: Sequence[str] = ()) -> Answer:
    return Answer(True, tuple(patch), warnings=tuple(warnings))


def deny(message: str, code: int = 403, reason: str = "Forbidden") -> Answer:
    return Answer(False, message=message, code=code, reason=reason)


def response(uid: str, answer: Answer) -> JsonObject:
    body: JsonObject = {"uid": uid, "allowed": answer.allowed}
    if answer.patch:
        body["patchType"] = "JSONPatch"
        body["patch"] = base64.b64encode(json.dumps(list(answer.patch)).encode()).decode()
    if not answer.allowed:
        body["status"] = {
            "metadata": {},
            "status": "Failure",
            "message": answer.message,
            "reason": answer.reason,
            "code": answer.code,
        }
    if answer.warnings:
        body["warnings"] = list(answer.warnings)
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": body}


def _pointer(path: Sequence[str]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


def json_patch(old: object, new: object, path: tuple[str, ...] = ()) -> list[JsonObject]:
    """RFC 6902 operations that turn `old` into `new`: objects compared key by key, anything
    else (lists included) replaced whole where it differs."""
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[JsonObject] = []
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": _pointer((*path, key))})
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": _pointer((*path, key)), "value": value})
            else:
                ops.extend(json_patch(old[key], value, (*path, key)))
        return ops
    if old == new and type(old) is type(new):
        return []
    return [{"op": "replace", "path": _pointer(path), "value": new}]
