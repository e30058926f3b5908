"""The JSON Schema of what POST /workloads takes, for the OpenAPI: a batch/v1 Job or a JobSet
in full; the other kinds it dispatches are named in the description only.

The route reads the manifest itself (manager.api.bodies) and manager.jobs.parse_job checks it;
this documents what that check takes, with Kubernetes' own constraints where they are tighter
(containers have a name and an image). What JSON Schema cannot say is in the descriptions: a
JobSet's replicas times a Job's pods must fit an int32, annotations take at most 256 KiB.
tests/integration/manager/test_openapi_conformance.py holds the schema and the check together.
"""

from __future__ import annotations

from typing import Any

from kueue_api.jobs import BATCH_JOB, BUILT_IN, JOBSET, dispatching
from kueue_api.jobs.base import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from kueue_api.quantity import QUANTITY_TEXT_PATTERN
from kueue_api.validation import DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN, LABEL_VALUE_PATTERN

_INT32 = {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
# As Quantity.parse takes one (a JSON integer beyond 64 bits is refused when the body is read).
QUANTITY_SCHEMA: dict[str, Any] = {
    "description": "A Kubernetes quantity: 1, 500m, 2Gi, 1e3",
    "anyOf": [
        {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1},
        {"type": "string", "pattern": QUANTITY_TEXT_PATTERN},
    ],
}
_DNS_LABEL = {"type": "string", "maxLength": 63, "pattern": DNS_LABEL_PATTERN}
# A label or annotation key: an optional DNS subdomain prefix and a name of at most 63.
_PREFIX = DNS_SUBDOMAIN_PATTERN.removeprefix("^").removesuffix("$")
_QUALIFIED_NAME = {
    "type": "string",
    "maxLength": 253,
    "pattern": f"^({_PREFIX}/)?([A-Za-z0-9][-A-Za-z0-9_.]{{0,61}})?[A-Za-z0-9]$",
}
_LABEL_VALUE = {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE_PATTERN}
_LABELS = {"type": "object", "propertyNames": _QUALIFIED_NAME, "additionalProperties": _LABEL_VALUE}
_ANNOTATIONS = {
    "type": "object",
    "description": "At most 256 KiB, keys and values together",
    "propertyNames": _QUALIFIED_NAME,
    "additionalProperties": {"type": "string"},
}


def ref(name: str) -> dict[str, str]:
    """A reference to the component `name`."""
    return {"$ref": f"#/components/schemas/{name}"}


def _object(
    properties: dict[str, Any], required: tuple[str, ...] = (), **more: Any
) -> dict[str, Any]:
    """An object with these properties; others are kept as sent (any JSON the bounded loader
    takes, manager.api.openapi's JsonValue) unless `more` says otherwise."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": ref("JsonValue"),
        **more,
    }
    if required:
        schema["required"] = list(required)
    return schema


def _manifest(api_version: str, kind: str, spec: str, description: str) -> dict[str, Any]:
    return _object(
        {
            "apiVersion": {"const": api_version},
            "kind": {"const": kind},
            "metadata": ref("JobMetadata"),
            "spec": ref(spec),
        },
        ("apiVersion", "kind", "metadata", "spec"),
        description=description,
    )


_RESOURCE_LIST = {"type": "object", "additionalProperties": ref("Quantity")}

# Components of the OpenAPI (create_app adds them); JobManifest is the request body.
COMPONENTS: dict[str, dict[str, Any]] = {
    "JobManifest": {
        "description": (
            "A batch/v1 Job or a jobset.x-k8s.io/v1alpha2 JobSet, as JSON or YAML (their "
            "schemas here); the route also takes, checked by their kinds' own rules and not "
            "described here yet: "
            + ", ".join(
                f"{kind.resource.api_version} {kind.resource.kind}"
                for kind in dispatching(BUILT_IN)
                if kind not in (BATCH_JOB, JOBSET)
            )
        ),
        "oneOf": [ref("Job"), ref("JobSet")],
    },
    "Job": _manifest(
        BATCH_JOB.resource.api_version, BATCH_JOB.resource.kind, "JobSpec", "A batch/v1 Job"
    ),
    "JobSet": _manifest(
        JOBSET.resource.api_version,
        JOBSET.resource.kind,
        "JobSetSpec",
        "A JobSet: its pods (every replica of every replicated Job) are one workload",
    ),
    "JobMetadata": _object(
        {
            "name": _DNS_LABEL,
            "namespace": _DNS_LABEL | {"description": "default when omitted"},
            "labels": _object(
                {
                    QUEUE_NAME_LABEL: {
                        "type": "string",
                        "maxLength": 63,
                        "pattern": DNS_SUBDOMAIN_PATTERN,
                        "description": "The LocalQueue, in the Job's namespace",
                    },
                    PRIORITY_CLASS_LABEL: _LABEL_VALUE
                    | {"description": "A WorkloadPriorityClass of the workers"},
                },
                (QUEUE_NAME_LABEL,),
                **_LABELS,
            ),
            "annotations": _ANNOTATIONS,
        },
        ("name", "labels"),
    ),
    "JobSpec": _object(
        {
            "parallelism": _INT32 | {"default": 1},
            "completions": _INT32,
            "template": _object(
                {
                    "metadata": _object({"labels": _LABELS, "annotations": _ANNOTATIONS}),
                    "spec": ref("PodSpec"),
                },
                ("spec",),
            ),
        },
        ("template",),
    ),
    "JobSetSpec": _object(
        {
            "replicatedJobs": {
                "type": "array",
                "minItems": 1,
                "items": _object(
                    {
                        "name": _DNS_LABEL,
                        "replicas": _INT32
                        | {
                            "default": 1,
                            "description": "Times the Job's pods, at most 2147483647 (an int32)",
                        },
                        "template": _object({"spec": ref("JobSpec")}, ("spec",)),
                    },
                    ("name", "template"),
                ),
            }
        },
        ("replicatedJobs",),
    ),
    "PodSpec": _object(
        {
            "containers": {"type": "array", "minItems": 1, "items": ref("Container")},
            "initContainers": {"type": "array", "items": ref("Container")},
        },
        ("containers",),
    ),
    "Container": _object(
        {
            "name": _DNS_LABEL,
            "image": {"type": "string", "minLength": 1},
            "resources": _object(
                {
                    "requests": _RESOURCE_LIST,
                    "limits": _RESOURCE_LIST,
                }
            ),
        },
        ("name", "image"),
    ),
    "Quantity": QUANTITY_SCHEMA,
}
