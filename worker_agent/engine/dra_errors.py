"""Kueue's DRA errors as apimachinery prints them (``field.Error``): the text a workload
held by DRA accounting shows in its QuotaReserved condition. Internal errors are cluster-state
shortages Kueue retries; the others are specs that cannot be admitted as written."""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["FieldError", "claims_path", "internal", "invalid", "missing_class", "not_found"]


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field.Error: `Error()` is "path: Type[: value][: detail]"."""

    path: str
    kind: str
    value: str | None
    detail: str
    internal: bool = False

    @property
    def text(self) -> str:
        value = "" if self.value is None else f": {self.value}"
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.path}: {self.kind}{value}{detail}"

    def under_template(self, template: str, path_prefix: str = "") -> FieldError:
        """The error as GetResourceRequestsForResourceClaimTemplates re-reports it: under
        the claim's path, its detail naming the template."""
        path = f"{path_prefix}.{self.path}" if path_prefix else self.path
        detail = f"ResourceClaimTemplate {template}: {self.detail}"
        return FieldError(path, self.kind, self.value, detail, self.internal)


def invalid(path: str, bad_value: object, detail: str) -> FieldError:
    return FieldError(path, "Invalid value", json.dumps(bad_value, ensure_ascii=False), detail)


def not_found(path: str, value: str) -> FieldError:
    return FieldError(path, "Not found", json.dumps(value, ensure_ascii=False), "")


def internal(path: str, detail: str) -> FieldError:
    return FieldError(path, "Internal error", None, detail, internal=True)


def missing_class(path: str, class_name: str) -> FieldError:
    return internal(
        path,
        f"failed to get DeviceClass {class_name}: deviceclasses.resource.k8s.io "
        f'"{class_name}" not found',
    )


def claims_path(ps_index: int, claim_index: int) -> str:
    return f"spec.podSets[{ps_index}].template.spec.resourceClaims[{claim_index}]"
