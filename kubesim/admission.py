"""What a write asks of admission control, and what answers it: the attributes of one admission
request (kube's admission.Attributes) and the interface the API's writes call at kube-apiserver's
two admission points (mutating before defaulting/validation, validating before storage).

kubesim/webhooks.py implements it with the cluster's admission webhooks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .resources import ResourceType

Obj = dict[str, Any]

CREATE = "CREATE"
UPDATE = "UPDATE"
DELETE = "DELETE"


@dataclass(frozen=True)
class Attributes:
    """One admission request: the operation on a resource at the version the client used.

    `namespace` is the object's namespace, or for a Namespace the namespace itself (as
    kube-apiserver sets it); `name` is empty for a create by generateName. `obj` is None for
    a DELETE; `old` is None for a CREATE. `options` is the Create/Update/DeleteOptions object.
    `defaults` re-applies decoding defaults to an object a mutating webhook patched."""

    operation: str
    resource_type: ResourceType
    version: str
    subresource: str
    namespace: str
    name: str
    obj: Obj | None
    old: Obj | None
    options: Obj
    dry_run: bool
    defaults: Callable[[Obj], None] | None = field(default=None, compare=False)

    def with_object(self, obj: Obj) -> Attributes:
        return Attributes(
            self.operation,
            self.resource_type,
            self.version,
            self.subresource,
            self.namespace,
            self.name,
            obj,
            self.old,
            self.options,
            self.dry_run,
            self.defaults,
        )


class Admission(Protocol):
    """Admission control for one request. Both calls raise ApiError to refuse it; `warnings`
    collects what the answer's Warning header carries."""

    warnings: list[str]

    async def mutate(self, attributes: Attributes) -> Obj:
        """The object after the mutating admission webhooks (`attributes.obj` if none)."""
        ...

    async def validate(self, attributes: Attributes) -> None:
        """Refuses the request if a validating admission webhook does."""
        ...
