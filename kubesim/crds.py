"""CustomResourceDefinitions: the resource types a CRD serves and the status the
apiextensions controller writes back (names accepted, Established)."""

from __future__ import annotations

from typing import Any

from .resources import PrinterColumn, ResourceType

Obj = dict[str, Any]


def resource_type_for(crd: Obj) -> ResourceType | None:
    """The served resource of a CRD, or None when no version is served."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    served = [
        v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("served", True)
    ]
    if not served:
        return None
    storage = next(
        (v["name"] for v in spec.get("versions") or [] if v.get("storage")), served[0]["name"]
    )
    schemas: dict[str, Obj] = {}
    columns: dict[str, tuple[PrinterColumn, ...]] = {}
    subresources: set[str] = set()
    for version in served:
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if isinstance(schema, dict):
            schemas[version["name"]] = schema
        columns[version["name"]] = tuple(
            PrinterColumn(
                name=str(column.get("name", "")),
                type=str(column.get("type", "string")),
                json_path=str(column.get("jsonPath", "")),
                description=str(column.get("description", "")),
                priority=int(column.get("priority", 0)),
                format=str(column.get("format", "")),
            )
            for column in version.get("additionalPrinterColumns") or []
        )
        for name in version.get("subresources") or {}:
            subresources.add(name)
    return ResourceType(
        group=str(spec.get("group", "")),
        versions=tuple(v["name"] for v in served),
        plural=str(names.get("plural", "")),
        kind=str(names.get("kind", "")),
        namespaced=spec.get("scope") == "Namespaced",
        singular=str(names.get("singular") or str(names.get("kind", "")).lower()),
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        subresources=tuple(sorted(subresources)),
        tracks_generation=True,
        storage_version=storage,
        schemas=schemas,
        columns=columns,
        from_crd=True,
    )


def established_status(crd: Obj, now: str) -> Obj:
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    storage = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    previous = (crd.get("status") or {}).get("storedVersions") or []
    stored = list(previous) + [v for v in storage if v not in previous]
    return {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            {
                "type": "Established",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
        "storedVersions": stored,
    }
