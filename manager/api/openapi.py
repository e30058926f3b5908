"""The OpenAPI document: what FastAPI generates from the routes, and what it cannot see there.

- Bodies the routes read themselves (manager.api.bodies) are added to the components: their
  models' schemas and the Job manifest's (manager.api.manifests). Fields a body model does not
  name are ignored or kept, and may hold any JSON the bounded loader takes (JsonValue).
- ErrorBody, which error_responses refers to.
- FastAPI's own 422 (HTTPValidationError) on every route with parameters is dropped: a bad
  parameter is a 400 here (manager.api.errors); a 422 is an invalid body, and documented so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from kueue_api.documents import MAX_DEPTH
from manager.agent_report import AgentReport
from manager.api import manifests
from manager.api.errors import ErrorBody
from manager.api.schemas import ClusterCreate, Nominations

_MODELS: tuple[type[BaseModel], ...] = (AgentReport, ClusterCreate, Nominations, ErrorBody)
_BODY_MODELS = (AgentReport, ClusterCreate, Nominations)
_REF = "#/components/schemas/{model}"
# Bounds and keywords apply to the types they name: numbers within 64 bits, arrays and objects of
# JSON values.
JSON_VALUE: dict[str, Any] = {
    "description": "Any JSON kept as sent: numbers within 64 bits and finite, strings without "
    f"NUL, nested at most {MAX_DEPTH} levels",
    "type": ["null", "boolean", "string", "number", "array", "object"],
    "minimum": -(2**63),
    "maximum": 2**63 - 1,
    "items": manifests.ref("JsonValue"),
    "additionalProperties": manifests.ref("JsonValue"),
}


def documented(generate: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """FastAPI's `app.openapi`, completed (see the module docstring)."""

    def openapi() -> dict[str, Any]:
        schema = generate()  # built once and cached by FastAPI; completing it is idempotent
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for model in _MODELS:
            model_schema = model.model_json_schema(by_alias=True, ref_template=_REF)
            defined = {model.__name__: model_schema, **model_schema.pop("$defs", {})}
            for name, definition in defined.items():
                if model in _BODY_MODELS:
                    _open_to_json(definition)
                components.setdefault(name, definition)
        for name, definition in manifests.COMPONENTS.items():
            components.setdefault(name, definition)
        components.setdefault("JsonValue", JSON_VALUE)
        for path in schema["paths"].values():
            for operation in path.values():
                if "HTTPValidationError" in str(operation["responses"].get("422")):
                    del operation["responses"]["422"]
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        return schema

    return openapi


def _open_to_json(schema: Any) -> None:
    """Objects of a body model take, besides their fields, what the bounded loader takes."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" and schema.get("additionalProperties", True) is True:
            schema["additionalProperties"] = manifests.ref("JsonValue")
        for value in schema.values():
            _open_to_json(value)
    elif isinstance(schema, list):
        for value in schema:
            _open_to_json(value)
