"""Checks a job's manifest must pass before it is queued or dispatched, each naming its field.

They are the part of kube-apiserver's validation that the manager needs before it stores a
submission (a worker's API server would refuse the copy otherwise, long after the user left),
plus what building the podSets needs: counts that are int32s, templates that are objects,
requests that are quantities. Every failure is a ManifestError with the field's path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kueue_api.pod_requests import pod_spec_requests
from kueue_api.quantity import Quantity, QuantityError
from kueue_api.validation import (
    DNS_LABEL_PATTERN,
    annotations_problems,
    is_label_value,
    is_qualified_name,
)

_DNS_LABEL = re.compile(DNS_LABEL_PATTERN)
INT32_MAX = 2**31 - 1


class ManifestError(ValueError):
    """A manifest that cannot be queued or dispatched; names the field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def require_mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ManifestError(field, "must be an object")
    return value


def int32(value: Any, field: str) -> int:
    """A non-negative int32, as Kubernetes declares parallelism, completions and replicas."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ManifestError(field, "must be a non-negative integer")
    if value > INT32_MAX:
        raise ManifestError(field, f"must be at most {INT32_MAX} (a 32-bit integer)")
    return value


def dns_label(value: Any, field: str, what: str) -> str:
    if not isinstance(value, str) or len(value) > 63 or not _DNS_LABEL.fullmatch(value):
        if isinstance(value, str):
            shown = repr(value) if len(value) <= 80 else f"a name of {len(value)} characters"
        else:
            shown = "None" if value is None else f"a {type(value).__name__}"
        raise ManifestError(
            field, f"{shown} is not a valid {what} (DNS-1123 label, at most 63 characters)"
        )
    return value


def metadata_labels(value: Any, field: str) -> Mapping[str, Any]:
    """Labels as Kubernetes checks them: qualified-name keys, label values (63 characters)."""
    found = require_mapping(value, field)
    for key, text in found.items():
        if not isinstance(text, str):
            raise ManifestError(f"{field}[{key}]", "a label value must be a string")
        for problem in is_qualified_name(key):
            raise ManifestError(field, f"key {key!r}: {problem}")
        for problem in is_label_value(text):
            raise ManifestError(f"{field}[{key}]", problem)
    return found


def metadata_annotations(value: Any, field: str) -> None:
    """Annotations as Kubernetes checks them: string values, qualified-name keys, and at most
    256 KiB in total."""
    found = require_mapping(value, field)
    for key, text in found.items():
        if not isinstance(text, str):
            raise ManifestError(f"{field}[{key}]", "an annotation value must be a string")
    for bad_key, problem in annotations_problems(found):
        raise ManifestError(field, problem if bad_key is None else f"key {bad_key!r}: {problem}")


def pod_template(template: Any, field: str) -> dict[str, int]:
    """Check a pod template at `field` (metadata, at least one container, well-formed
    resources); returns its pod's requests in thousandths (kueue_api.pod_requests)."""
    found = require_mapping(template, field)
    metadata = require_mapping(found.get("metadata") or {}, f"{field}.metadata")
    metadata_labels(metadata.get("labels") or {}, f"{field}.metadata.labels")
    metadata_annotations(metadata.get("annotations") or {}, f"{field}.metadata.annotations")
    pod_spec = require_mapping(found.get("spec"), f"{field}.spec")
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise ManifestError(f"{field}.spec.containers", "at least one container is required")
    return pod_requests(pod_spec, f"{field}.spec")


def pod_requests(pod_spec: Mapping[str, Any], at: str) -> dict[str, int]:
    """Per-pod requests (milli) as Kubernetes and the agent count them; a container, resource
    list or amount that is not well formed is refused, by field."""
    for kind in ("containers", "initContainers"):
        for index, container in enumerate(pod_spec.get(kind) or []):
            field = f"{at}.{kind}[{index}]"
            require_mapping(require_mapping(container, field).get("resources") or {}, field)
    if pod_spec.get("resources") is not None:
        require_mapping(pod_spec["resources"], f"{at}.resources")
    return pod_spec_requests(pod_spec, _amounts, at)


def _amounts(value: object, field: str) -> dict[str, int]:
    """A resource list in thousandths; ManifestError naming the amount that is not one."""
    result: dict[str, int] = {}
    for resource, amount in require_mapping(value or {}, field).items():
        try:
            result[str(resource)] = Quantity.parse(amount).milli_value()
        except (QuantityError, TypeError) as error:
            raise ManifestError(f"{field}.{resource}", str(error)) from error
    return result


def job_spec(spec: Any, field: str) -> int:
    """Check a batch/v1 Job spec at `field`; returns its pods at once."""
    found = require_mapping(spec, field)
    parallelism = int32(found.get("parallelism", 1), f"{field}.parallelism")
    completions = found.get("completions")
    if completions is not None:
        parallelism = min(parallelism, int32(completions, f"{field}.completions"))
    pod_template(found.get("template"), f"{field}.template")
    return parallelism
