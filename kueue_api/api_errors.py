"""Kubernetes API errors as values: every failure becomes a `Status` body with reason and code,
in kube-apiserver's words (kubesim answers with them, and so does the agent's visibility API)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ApiError(Exception):
    """An error the API server answers with a `kind: Status` body."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # empty in a webhook's refusal without one, and then omitted
            body["reason"] = self.reason
        body["code"] = self.code
        if self.details:
            body["details"] = self.details
        return body


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    """StatusDetails as kube-apiserver encodes them: `group` is omitted when empty."""
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    qualified = _qualified(resource, group)
    return ApiError(
        404,
        "NotFound",
        f'{qualified} "{name}" not found',
        _details(name, group, resource),
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    qualified = _qualified(resource, group)
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified} "{name}" already exists',
        _details(name, group, resource),
    )


def conflict(resource: str, group: str, name: str, why: str | None = None) -> ApiError:
    qualified = _qualified(resource, group)
    text = (
        why
        or "the object has been modified; please apply your changes to the latest version and "
        "try again"
    )
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified} "{name}": {text}',
        _details(name, group, resource),
    )


# field.ErrorType by the body's opening words (k8s.io/apimachinery/pkg/util/validation/field).
_CAUSE_TYPES = (
    ("Unsupported value", "FieldValueNotSupported"),
    ("Required value", "FieldValueRequired"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Forbidden", "FieldValueForbidden"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
)


def _cause_type(what: str) -> str:
    return next(
        (kind for words, kind in _CAUSE_TYPES if what.startswith(words)), "FieldValueInvalid"
    )


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 Invalid, with one cause per (field path, message), as apierrors.NewInvalid words it:
    one error as it is, several as an aggregate `[a, b]` without repeats."""
    texts = list(dict.fromkeys(f"{path}: {what}" if path else what for path, what in causes))
    text = texts[0] if len(texts) == 1 else f"[{', '.join(texts)}]"
    return ApiError(
        422,
        "Invalid",
        f'{kind}.{group} "{name}" is invalid: {text}'
        if group
        else f'{kind} "{name}" is invalid: {text}',
        {
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [
                {"reason": _cause_type(what), "message": what, "field": path}
                for path, what in causes
            ],
        },
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/json-patch+json, "
        "application/merge-patch+json, application/strategic-merge-patch+json, "
        f'application/apply-patch+yaml (got "{content_type}")',
    )
