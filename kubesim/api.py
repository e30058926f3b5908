"""The semantics of kube-apiserver over the store: create, get, list, update, patch, apply and
delete, with uid/generateName/generation, optimistic concurrency, the status subresource,
finalizers, namespaces and CRD registration. Both the HTTP layer and the simulated
controllers go through here, so they see one set of rules.
"""

from __future__ import annotations

import base64
import dataclasses
import random
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from kueue_api.api_errors import (
    ApiError,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    gone,
    invalid,
    not_found,
)
from kueue_api.jsoncopy import json_copy
from kueue_api.timestamps import rfc3339

from . import apply as ssa
from . import schema as schema_mod
from . import strategies, validation_rules
from .admission import CREATE, DELETE, UPDATE, Admission, Attributes
from .crds import established_status, resource_type_for
from .jsoncodec import dumps, loads
from .patches import json_patch, merge_patch, strategic_merge_patch
from .resources import Registry, ResourceType
from .selectors import FieldRequirement, Requirement, fields_match, labels_match
from .store import ADDED, DELETED, MODIFIED, Store

Obj = dict[str, Any]

_NAME_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"
_SYSTEM_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")

CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"
POD_KEY = "/pods"
PRIORITY_CLASS_KEY = "scheduling.k8s.io/priorityclasses"
NAMESPACE_KEY = "/namespaces"

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
APPLY_PATCH_CBOR = "application/apply-patch+cbor"


@dataclass(frozen=True)
class ListResult:
    items: list[Obj]
    resource_version: str
    continue_token: str | None
    remaining: int | None


@dataclass(frozen=True)
class WriteOptions:
    dry_run: bool = False
    field_manager: str = ""
    strict: bool = False  # fieldValidation=Strict
    force: bool = False
    # The managedFields operation a write with a field_manager records: "Update" for create,
    # update and non-apply patches; an apply has recorded its own "Apply" entry already.
    operation: str = "Update"


_clock_cache: list[Any] = [0, ""]


def _now_text() -> str:
    """RFC 3339 seconds; formatted once per second, as most writes stamp the same second."""
    now = time.time()
    second = int(now)
    if _clock_cache[0] != second:
        _clock_cache[0] = second
        _clock_cache[1] = rfc3339(datetime.fromtimestamp(second, UTC))
    return str(_clock_cache[1])


class Api:
    def __init__(
        self, store: Store, registry: Registry, clock: Callable[[], str] = _now_text
    ) -> None:
        self.store = store
        self.registry = registry
        self.clock = clock
        self.warnings: list[str] = []

    # ---- helpers -------------------------------------------------------------------------

    def _type(self, key: str) -> ResourceType:
        resource_type = self.registry.by_key(key)
        if resource_type is None:
            raise ApiError(
                404, "NotFound", f"the server could not find the requested resource ({key})"
            )
        return resource_type

    def _require(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.store.get(rt.key, namespace if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return obj

    def _check_namespace(self, rt: ResourceType, namespace: str, *, creating: bool) -> None:
        if not rt.namespaced:
            return
        if not namespace:
            raise bad_request("the namespace of the object must be set")
        ns = self.store.get(NAMESPACE_KEY, "", namespace)
        if ns is None:
            raise not_found("namespaces", "", namespace)
        if creating and ns["metadata"].get("deletionTimestamp"):
            raise forbidden(
                f'{rt.plural}{"." + rt.group if rt.group else ""} "'
                f'{namespace}" is forbidden: unable to create new content in namespace '
                f"{namespace} because it is being terminated"
            )

    def _schema(self, rt: ResourceType, version: str) -> Obj | None:
        return rt.schemas.get(version) if rt.from_crd else None

    def _check_body(self, rt: ResourceType, version: str, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        kind = body.get("kind")
        if kind and kind != rt.kind:
            raise bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
            )
        api_version = body.get("apiVersion")
        if api_version and api_version != rt.api_version(version):
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({rt.api_version(version)})"
            )
        meta = body.get("metadata")
        if meta is None:
            body["metadata"] = {}
        elif not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        body["kind"] = rt.kind
        body["apiVersion"] = rt.api_version(rt.preferred_version if rt.from_crd else version)
        return body

    def _custom_resource_checks(
        self,
        rt: ResourceType,
        version: str,
        obj: Obj,
        options: WriteOptions,
        only_status: bool = False,
        stored: Any = None,
        stored_object: Obj | None = None,
    ) -> None:
        """Defaults, pruning and validation from the CRD schema, then its CEL rules. A status
        write checks only the status against the schema: the rest is the stored object,
        already checked when it was written; the rules see the whole object. `stored` is the
        stored counterpart of what is checked (its status, or the object), for ratcheting;
        `stored_object` the whole stored object, for the rules (None on a create)."""
        schema = self._schema(rt, version)
        if schema is None:
            return
        full_schema = schema
        ratchets = stored is not None and version == rt.preferred_version
        if only_status:
            status_schema = (schema.get("properties") or {}).get("status")
            if status_schema is None or "status" not in obj:
                return
            if ratchets:
                status_schema = _ratchet(status_schema, obj["status"], stored)
            schema = {"type": "object", "properties": {"status": status_schema}}
            before = {"status": stored} if ratchets else schema_mod.UNSTORED
            result = schema_mod.process(schema, {"status": obj["status"]}, before)
        elif ratchets:
            result = schema_mod.process(_ratchet(schema, obj, stored), obj, stored)
        else:
            result = schema_mod.process(schema, obj)
        if result.unknown and options.strict:
            fields = ", ".join(f'unknown field "{path}"' for path in result.unknown)
            raise ApiError(400, "BadRequest", f"strict decoding error: {fields}")
        if result.unknown:
            self.warnings.extend(f'unknown field "{path}"' for path in result.unknown)
        errors = list(result.errors)
        if stored_object is None:
            rules, warnings = validation_rules.rule_errors(full_schema, obj, errors)
        else:
            rules, warnings = validation_rules.rule_errors(full_schema, obj, errors, stored_object)
        errors.extend(rules)
        if errors:
            raise invalid(rt.kind, rt.group, obj["metadata"].get("name", ""), errors)
        self.warnings.extend(warnings)

    def _generate_name(self, rt: ResourceType, namespace: str, prefix: str) -> str:
        for _ in range(20):
            name = prefix + "".join(random.choices(_NAME_SUFFIX, k=5))
            if self.store.get(rt.key, namespace, name) is None:
                return name
        raise ApiError(500, "AlreadyExists", f"could not generate a unique name for {prefix}")

    # ---- reads ---------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        return self._require(rt, namespace, name)

    def list(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: tuple[Requirement, ...] = (),
        fields: tuple[FieldRequirement, ...] = (),
        limit: int = 0,
        continue_token: str = "",
    ) -> ListResult:
        start_after = ""
        list_rv = self.store.rv
        if continue_token:
            try:
                decoded = loads(base64.urlsafe_b64decode(continue_token.encode()))
                start_after = str(decoded["start"])
                list_rv = int(decoded["rv"])
            except Exception as error:
                raise bad_request(
                    "continue key is not valid: incorrect encoded start resourceVersion"
                ) from error
            if list_rv < self.store.compacted_rv:
                raise gone(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter."
                )
        scope = namespace if rt.namespaced else None
        selected = [
            obj
            for obj in self.store.items(rt.key, scope)
            if (not labels or labels_match(labels, obj["metadata"].get("labels")))
            and (not fields or fields_match(fields, obj))
        ]
        if limit or continue_token:
            selected.sort(key=_sort_key)
        if start_after:
            selected = [obj for obj in selected if _sort_key(obj) > start_after]
        if limit and len(selected) > limit:
            page = selected[:limit]
            token = base64.urlsafe_b64encode(
                dumps({"rv": list_rv, "start": _sort_key(page[-1])})
            ).decode()
            return ListResult(page, str(list_rv), token, len(selected) - limit)
        return ListResult(selected, str(list_rv if continue_token else self.store.rv), None, None)

    # ---- admission -----------------------------------------------------------------------
    #
    # Every write is a coroutine with kube-apiserver's two admission points: mutating (after
    # decoding defaults, before the registry's defaults and validation) and validating (the
    # final object, before storage). Without admission control it never waits, so the public
    # methods (create, update, patch, delete) run it to completion at once; the HTTP layer
    # awaits the admitted_* variants when webhooks are configured.

    def _attributes(
        self,
        operation: str,
        rt: ResourceType,
        version: str,
        subresource: str,
        namespace: str,
        name: str,
        obj: Obj | None,
        old: Obj | None,
        options: Obj,
        dry_run: bool,
        defaults: Callable[[Obj], None] | None = None,
    ) -> Attributes:
        if rt.key == NAMESPACE_KEY:
            namespace = name  # kube-apiserver names a Namespace's own requests after it
        return Attributes(
            operation,
            rt,
            version,
            subresource,
            namespace,
            name,
            obj,
            old,
            options,
            dry_run,
            defaults,
        )

    async def _mutating(self, admission: Admission, attributes: Attributes) -> Obj:
        admission.warnings.extend(self.warnings)
        self.warnings.clear()
        try:
            return await admission.mutate(attributes)
        finally:
            self.warnings.clear()  # what requests that ran meanwhile left behind

    async def _validating(self, admission: Admission, attributes: Attributes) -> None:
        admission.warnings.extend(self.warnings)
        self.warnings.clear()
        try:
            await admission.validate(attributes)
        finally:
            self.warnings.clear()

    def _unchanged(self, rt: ResourceType, namespace: str, name: str, current: Obj) -> None:
        """After admission waited, the stored object must still be `current`, or the write
        starts over (as kube-apiserver's GuaranteedUpdate retries on a newer object)."""
        if self.store.get(rt.key, namespace, name) is not current:
            raise _Stale()

    async def _retrying(
        self, rt: ResourceType, name: str, write: Callable[[], Coroutine[Any, Any, Obj]]
    ) -> Obj:
        for _ in range(ADMISSION_ATTEMPTS - 1):
            try:
                return await write()
            except _Stale:
                continue
        try:
            return await write()
        except _Stale:
            raise conflict(rt.plural, rt.group, name) from None

    def _decoding_defaults(self, rt: ResourceType, version: str) -> Callable[[Obj], None]:
        schema = self._schema(rt, version)
        if schema is not None:
            return lambda obj: schema_mod.apply_defaults(schema, obj)
        return lambda obj: strategies.default_on_decode(rt, obj)

    async def admitted_create(
        self,
        admission: Admission,
        rt: ResourceType,
        namespace: str,
        body: Any,
        version: str | None = None,
        options: WriteOptions = WriteOptions(),
    ) -> Obj:
        return await self._create(rt, namespace, body, version, options, admission)

    async def admitted_update(
        self,
        admission: Admission,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        version: str | None = None,
        subresource: str = "",
        options: WriteOptions = WriteOptions(),
    ) -> Obj:
        return await self._retrying(
            rt,
            name,
            lambda: self._update(
                rt, namespace, name, json_copy(body), version, subresource, options, admission
            ),
        )

    async def admitted_patch(
        self,
        admission: Admission,
        rt: ResourceType,
        namespace: str,
        name: str,
        patch_type: str,
        patch: Any,
        version: str | None = None,
        subresource: str = "",
        options: WriteOptions = WriteOptions(),
    ) -> Obj:
        return await self._retrying(
            rt,
            name,
            lambda: self._patch(
                rt,
                namespace,
                name,
                patch_type,
                json_copy(patch),
                version,
                subresource,
                options,
                None,
                admission,
            ),
        )

    async def admitted_delete(
        self,
        admission: Admission,
        rt: ResourceType,
        namespace: str,
        name: str,
        delete_options: Obj | None = None,
        options: WriteOptions = WriteOptions(),
        version: str | None = None,
    ) -> Obj:
        return await self._retrying(
            rt,
            name,
            lambda: self._delete(rt, namespace, name, delete_options, options, version, admission),
        )

    # ---- create --------------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        version: str | None = None,
        options: WriteOptions = WriteOptions(),
    ) -> Obj:
        return _at_once(self._create(rt, namespace, body, version, options, None))

    async def _create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        version: str | None,
        options: WriteOptions,
        admission: Admission | None,
    ) -> Obj:
        version = version or rt.preferred_version
        obj = self._check_body(rt, version, body)
        namespace = _placed(rt, namespace, obj["metadata"])
        requested = ""  # the name asked for: none with generateName
        if admission is not None:
            requested = str(obj["metadata"].get("name") or "")
            obj = await self._mutate_create(admission, rt, version, namespace, obj, options)
            namespace = _placed(rt, namespace, obj["metadata"])
        meta = obj["metadata"]
        name = meta.get("name")
        if not name:
            prefix = meta.get("generateName")
            if not prefix:
                raise invalid(
                    rt.kind,
                    rt.group,
                    "",
                    [("metadata.name", "Required value: name or generateName is required")],
                )
            name = self._generate_name(rt, namespace, str(prefix))
            meta["name"] = name
        strategies.raise_if(strategies.validate_name(rt, str(name)), rt, str(name))
        self._check_namespace(rt, namespace, creating=True)
        if self.store.get(rt.key, namespace, name) is not None:
            raise already_exists(rt.plural, rt.group, name)
        for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(field, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self.clock()
        if rt.tracks_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if not options.field_manager or meta.get("managedFields") is None:
            meta.pop("managedFields", None)
        strategies.reset_status_on_create(rt, obj)
        strategies.default_on_create(rt, obj)
        self._record_update(rt, version, None, obj, options)
        if rt.key == POD_KEY:
            self._resolve_priority(obj)
        self._custom_resource_checks(rt, version, obj, options)
        strategies.raise_if(strategies.validate(rt, obj), rt, str(name))
        if admission is not None:
            attributes = self._attributes(
                CREATE,
                rt,
                version,
                "",
                namespace,
                requested,
                obj,
                None,
                _options_object("CreateOptions", options),
                options.dry_run,
            )
            await self._validating(admission, attributes)
            self._check_namespace(rt, namespace, creating=True)
            if self.store.get(rt.key, namespace, name) is not None:
                raise already_exists(rt.plural, rt.group, name)
        if options.dry_run:
            return obj
        self.store.commit(rt.key, ADDED, obj, None)
        if rt.key == CRD_KEY:
            self._crd_changed(obj)
        return self.store.get(rt.key, namespace, name) or obj

    async def _mutate_create(
        self,
        admission: Admission,
        rt: ResourceType,
        version: str,
        namespace: str,
        obj: Obj,
        options: WriteOptions,
    ) -> Obj:
        """The object as mutating webhooks see it on a create (after the NamespaceLifecycle
        check, decoding defaults and the Priority plugin; no uid or timestamps yet), and as
        they leave it."""
        self._check_namespace(rt, namespace, creating=True)
        meta = obj["metadata"]
        for field in _SYSTEM_META:
            meta.pop(field, None)
        defaults = self._decoding_defaults(rt, version)
        defaults(obj)
        if rt.key == POD_KEY:
            self._resolve_priority(obj)
        attributes = self._attributes(
            CREATE,
            rt,
            version,
            "",
            namespace,
            str(meta.get("name") or ""),
            obj,
            None,
            _options_object("CreateOptions", options),
            options.dry_run,
            defaults,
        )
        return self._check_body(rt, version, await self._mutating(admission, attributes))

    def _resolve_priority(self, pod: Obj) -> None:
        """The Priority admission plugin: priorityClassName -> spec.priority."""
        spec = pod.setdefault("spec", {})
        class_name = spec.get("priorityClassName")
        if class_name:
            found = self.store.get(PRIORITY_CLASS_KEY, "", str(class_name))
            if found is None:
                raise forbidden(
                    f'pods "{pod["metadata"].get("name", "")}" is forbidden: no PriorityClass '
                    f"with name {class_name} was found"
                )
        else:
            found = next(
                (pc for pc in self.store.items(PRIORITY_CLASS_KEY) if pc.get("globalDefault")),
                None,
            )
            if found is not None:
                spec["priorityClassName"] = found["metadata"]["name"]
        if found is not None:
            spec["priority"] = int(found.get("value", 0))
            spec.setdefault(
                "preemptionPolicy", found.get("preemptionPolicy", "PreemptLowerPriority")
            )
        else:
            spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")

    # ---- update --------------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        version: str | None = None,
        subresource: str = "",
        options: WriteOptions = WriteOptions(),
    ) -> Obj:
        return _at_once(
            self._update(rt, namespace, name, body, version, subresource, options, None)
        )

    async def _update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        version: str | None,
        subresource: str,
        options: WriteOptions,
        admission: Admission | None,
    ) -> Obj:
        version = version or rt.preferred_version
        namespace = namespace if rt.namespaced else ""
        current = self._require(rt, namespace, name)
        obj = self._check_body(rt, version, body)
        self._check_update_target(rt, namespace, name, obj["metadata"], current)
        attributes: Attributes | None = None
        if admission is not None:
            attributes = self._attributes(
                UPDATE,
                rt,
                version,
                subresource,
                namespace,
                name,
                obj,
                current,
                _options_object("UpdateOptions", options),
                options.dry_run,
            )
            obj = self._check_body(rt, version, await self._mutating(admission, attributes))
            self._unchanged(rt, namespace, name, current)
            self._check_update_target(rt, namespace, name, obj["metadata"], current)
        if subresource == "status":
            obj = self._status_update(obj, current)
            if rt.from_crd:
                self._custom_resource_checks(
                    rt,
                    version,
                    obj,
                    options,
                    only_status=True,
                    stored=current.get("status"),
                    stored_object=current,
                )
        else:
            self._main_update(rt, namespace, name, obj, current)
            if rt.from_crd:
                self._custom_resource_checks(
                    rt, version, obj, options, stored=current, stored_object=current
                )
            else:
                strategies.default_on_update(rt, obj)
            strategies.raise_if(strategies.validate(rt, obj, current), rt, name)
            strategies.raise_if(strategies.validate_update(rt, obj, current), rt, name)
        current_meta = current["metadata"]
        if current_meta.get("deletionTimestamp"):
            added = set(obj["metadata"].get("finalizers") or []) - set(
                current_meta.get("finalizers") or []
            )
            if added:
                listed = ", ".join(f'"{f}"' for f in sorted(added))
                raise invalid(
                    rt.kind,
                    rt.group,
                    name,
                    [
                        (
                            "metadata.finalizers",
                            "Forbidden: no new finalizers can be added if the object is being "
                            f"deleted, found new finalizers []string{{{listed}}}",
                        )
                    ],
                )
        self._record_update(rt, version, current, obj, options, subresource)
        meta = obj["metadata"]
        meta["resourceVersion"] = current_meta["resourceVersion"]
        if rt.tracks_generation and _spec_of(obj) != _spec_of(current):
            meta["generation"] = int(current_meta.get("generation", 1)) + 1
        if admission is not None and attributes is not None:
            await self._validating(admission, attributes.with_object(obj))
            self._unchanged(rt, namespace, name, current)
        return self._write_update(rt, obj, current, options)

    def _check_update_target(
        self, rt: ResourceType, namespace: str, name: str, meta: Obj, current: Obj
    ) -> None:
        """Name and namespace must match the URL; resourceVersion and uid the stored object."""
        if meta.get("name") and meta["name"] != name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({name})"
            )
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        current_meta = current["metadata"]
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv and wanted_rv != current_meta["resourceVersion"]:
            raise conflict(rt.plural, rt.group, name)
        if meta.get("uid") and meta["uid"] != current_meta.get("uid"):
            raise conflict(
                rt.plural,
                rt.group,
                name,
                f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: "
                f"{current_meta.get('uid')}",
            )

    @staticmethod
    def _status_update(obj: Obj, current: Obj) -> Obj:
        """The /status endpoint: the new status on the stored everything-else. The stored
        parts are shared, not copied: stored objects are never mutated, and the write below
        only replaces the (fresh) metadata dict's resourceVersion."""
        new = {k: v for k, v in current.items() if k != "status"}
        new["metadata"] = dict(current["metadata"])
        if "status" in obj:
            new["status"] = obj["status"]
        return new

    @staticmethod
    def _main_update(rt: ResourceType, namespace: str, name: str, obj: Obj, current: Obj) -> None:
        """The main endpoint: keep the stored status and system metadata."""
        meta = obj["metadata"]
        current_meta = current["metadata"]
        if rt.has_status:
            if "status" in current:
                status = current["status"]
                obj["status"] = json_copy(status) if rt.from_crd else status
            else:
                obj.pop("status", None)
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        for field in (*_SYSTEM_META, "generation"):
            if field in current_meta:
                meta[field] = current_meta[field]
            else:
                meta.pop(field, None)
        if meta.get("managedFields") is None and current_meta.get("managedFields"):
            meta["managedFields"] = current_meta["managedFields"]

    def _record_update(
        self,
        rt: ResourceType,
        version: str,
        current: Obj | None,
        obj: Obj,
        options: WriteOptions,
        subresource: str = "",
    ) -> None:
        """The Update managedFields entry of a non-apply write that names its fieldManager."""
        if not options.field_manager or options.operation != "Update":
            return
        list_keys = (
            ssa.schema_list_keys(self._schema(rt, version))
            if rt.from_crd
            else ssa.builtin_list_keys
        )
        ssa.record_update(
            current,
            obj,
            options.field_manager,
            list_keys,
            self.clock(),
            rt.api_version(version),
            subresource,
        )

    def _write_update(self, rt: ResourceType, obj: Obj, current: Obj, options: WriteOptions) -> Obj:
        meta = obj["metadata"]
        if obj == current or _same_but_times(obj, current):
            return current  # a no-op update writes nothing, as kube-apiserver does
        if options.dry_run:
            return obj
        name = meta["name"]
        namespace = meta.get("namespace") or ""
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(rt, obj, current)
            return obj
        self.store.commit(rt.key, MODIFIED, obj, current)
        if rt.key == CRD_KEY:
            self._crd_changed(obj)
        return self.store.get(rt.key, namespace, name) or obj

    # ---- patch and apply -----------------------------------------------------------------

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        patch_type: str,
        patch: Any,
        version: str | None = None,
        subresource: str = "",
        options: WriteOptions = WriteOptions(),
        view: tuple[Callable[[Obj], Obj], Callable[[Obj], Obj]] | None = None,
    ) -> Obj:
        """`view` (to the client's encoding, back to the stored one) is for a type served over
        another's storage: the patch is written against the client's encoding of the object."""
        return _at_once(
            self._patch(
                rt, namespace, name, patch_type, patch, version, subresource, options, view, None
            )
        )

    async def _patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        patch_type: str,
        patch: Any,
        version: str | None,
        subresource: str,
        options: WriteOptions,
        view: tuple[Callable[[Obj], Obj], Callable[[Obj], Obj]] | None,
        admission: Admission | None,
    ) -> Obj:
        version = version or rt.preferred_version
        namespace = namespace if rt.namespaced else ""
        if patch_type in (APPLY_PATCH, APPLY_PATCH_CBOR):
            return await self._apply(
                rt, namespace, name, patch, version, subresource, options, admission
            )
        current = self._require(rt, namespace, name)
        base = json_copy(view[0](current) if view is not None else current)
        if patch_type == MERGE_PATCH:
            if not isinstance(patch, dict):
                raise bad_request("a merge patch must be a JSON object")
            patched = merge_patch(base, patch)
        elif patch_type == JSON_PATCH:
            patched = json_patch(base, patch)
        elif patch_type == STRATEGIC_PATCH:
            if rt.from_crd:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media types "
                    f"include: {JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}",
                )
            patched = strategic_merge_patch(base, patch)
        else:
            raise ApiError(415, "UnsupportedMediaType", f"unsupported patch type {patch_type!r}")
        if not isinstance(patched, dict):
            raise bad_request("the patched object must be a JSON object")
        if view is not None:
            patched = view[1](patched)
        patched.setdefault("metadata", {})
        if rt.from_crd:
            patched["apiVersion"] = rt.api_version(version)  # stored at another served version
        if not patched["metadata"].get("resourceVersion"):
            patched["metadata"]["resourceVersion"] = ""
        return await self._update(
            rt, namespace, name, patched, version, subresource, options, admission
        )

    async def _apply(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        applied: Any,
        version: str,
        subresource: str,
        options: WriteOptions,
        admission: Admission | None,
    ) -> Obj:
        if not isinstance(applied, dict):
            raise bad_request("an apply patch must be an object")
        if not options.field_manager:
            raise bad_request(
                "PATCH, application/apply-patch+yaml requests must have fieldManager set"
            )
        for field in ("apiVersion", "kind"):
            if not applied.get(field):
                raise bad_request(f"invalid object type: {field} must be set in an apply request")
        meta = applied.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({name})"
            )
        list_keys = (
            ssa.schema_list_keys(self._schema(rt, version))
            if rt.from_crd
            else ssa.builtin_list_keys
        )
        current = self.store.get(rt.key, namespace, name)
        result = ssa.apply(
            current,
            applied,
            options.field_manager,
            list_keys,
            self.clock(),
            rt.api_version(version),
            subresource,
            force=options.force,
        )
        result.setdefault("metadata", {})["name"] = name
        applied_options = dataclasses.replace(options, operation="Apply")
        if current is None:
            if subresource:
                raise not_found(rt.plural, rt.group, name)
            if rt.namespaced:
                result["metadata"]["namespace"] = namespace
            return await self._create(rt, namespace, result, version, applied_options, admission)
        wanted_rv = meta.get("resourceVersion")
        result["metadata"]["resourceVersion"] = wanted_rv or ""
        return await self._update(
            rt, namespace, name, result, version, subresource, applied_options, admission
        )

    # ---- delete --------------------------------------------------------------------------

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        delete_options: Obj | None = None,
        options: WriteOptions = WriteOptions(),
    ) -> Obj:
        return _at_once(self._delete(rt, namespace, name, delete_options, options, None, None))

    async def _delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        delete_options: Obj | None,
        options: WriteOptions,
        version: str | None,
        admission: Admission | None,
    ) -> Obj:
        namespace = namespace if rt.namespaced else ""
        current = self._require(rt, namespace, name)
        opts = delete_options or {}
        _check_preconditions(rt, name, opts.get("preconditions") or {}, current["metadata"])
        policy = _propagation_policy(rt, opts)
        if admission is not None:
            shown = {k: v for k, v in opts.items() if k not in ("kind", "apiVersion", "dryRun")}
            if options.dry_run:
                shown["dryRun"] = ["All"]
            attributes = self._attributes(
                DELETE,
                rt,
                version or rt.preferred_version,
                "",
                namespace,
                name,
                None,
                current,
                {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", **shown},
                options.dry_run,
            )
            await self._validating(admission, attributes)
            self._unchanged(rt, namespace, name, current)
        if options.dry_run:
            return current
        if rt.key == NAMESPACE_KEY:
            return self._delete_namespace(rt, current)
        current_meta = current["metadata"]
        uid = current_meta.get("uid", "")
        finalizers = list(current_meta.get("finalizers") or [])
        if policy == "Orphan":
            self._orphan_dependents(uid)
        if (
            policy == "Foreground"
            and self.store.dependents.get(uid)
            and "foregroundDeletion" not in finalizers
        ):
            finalizers.append("foregroundDeletion")
        if finalizers:
            return self._mark_deleting(rt, current, finalizers)
        obj = dict(current)
        obj["metadata"] = dict(current_meta)
        self._remove(rt, obj, current)
        return obj

    def _mark_deleting(self, rt: ResourceType, current: Obj, finalizers: Sequence[str]) -> Obj:
        """Finalizers hold the object: it gets a deletionTimestamp and waits for them."""
        current_meta = current["metadata"]
        if current_meta.get("deletionTimestamp") and list(finalizers) == current_meta.get(
            "finalizers"
        ):
            return current
        obj = dict(current)
        obj["metadata"] = {
            **current_meta,
            "finalizers": list(finalizers),
            "deletionTimestamp": current_meta.get("deletionTimestamp") or self.clock(),
            "deletionGracePeriodSeconds": 0,
        }
        if rt.tracks_generation:
            obj["metadata"]["generation"] = int(current_meta.get("generation", 1)) + 1
        self.store.commit(rt.key, MODIFIED, obj, current)
        return obj

    def _remove(self, rt: ResourceType, obj: Obj, current: Obj) -> None:
        obj["metadata"] = dict(obj["metadata"])
        self.store.commit(rt.key, DELETED, obj, current)
        if rt.key == CRD_KEY:
            self._crd_removed(current)

    def _orphan_dependents(self, uid: str) -> None:
        for key, namespace, name in list(self.store.dependents.get(uid, ())):
            dependent = self.store.get(key, namespace, name)
            if dependent is None:
                continue
            updated = dict(dependent)
            updated["metadata"] = dict(dependent["metadata"])
            updated["metadata"]["ownerReferences"] = [
                ref
                for ref in dependent["metadata"].get("ownerReferences") or []
                if ref.get("uid") != uid
            ] or None
            if updated["metadata"]["ownerReferences"] is None:
                del updated["metadata"]["ownerReferences"]
            self.store.commit(key, MODIFIED, updated, dependent)

    def _delete_namespace(self, rt: ResourceType, current: Obj) -> Obj:
        if current["metadata"].get("deletionTimestamp"):
            return current
        obj = dict(current)
        obj["metadata"] = {**current["metadata"], "deletionTimestamp": self.clock()}
        obj["status"] = {**(current.get("status") or {}), "phase": "Terminating"}
        self.store.commit(rt.key, MODIFIED, obj, current)
        return obj

    def finalize_namespace(self, name: str) -> None:
        """Called by the namespace controller once the namespace holds nothing."""
        current = self.store.get(NAMESPACE_KEY, "", name)
        if current is None or not current["metadata"].get("deletionTimestamp"):
            return
        rt = self._type(NAMESPACE_KEY)
        obj = dict(current)
        obj["metadata"] = dict(current["metadata"])
        self._remove(rt, obj, current)

    # ---- CRDs ----------------------------------------------------------------------------

    def _crd_changed(self, crd: Obj) -> None:
        resource_type = resource_type_for(crd)
        if resource_type is not None:
            existing = self.registry.by_key(resource_type.key)
            if existing is not None and not existing.from_crd:
                return
            self.registry.add(resource_type)
        status = established_status(crd, self.clock())
        if crd.get("status") != status and not _same_conditions(crd.get("status"), status):
            updated = dict(crd)
            updated["metadata"] = dict(crd["metadata"])
            updated["status"] = status
            self.store.commit(CRD_KEY, MODIFIED, updated, crd)

    def _crd_removed(self, crd: Obj) -> None:
        resource_type = resource_type_for(crd)
        if resource_type is None:
            return
        for obj in list(self.store.items(resource_type.key)):
            deleted = dict(obj)
            deleted["metadata"] = dict(obj["metadata"])
            self.store.commit(resource_type.key, DELETED, deleted, obj)
        self.store.drop_resource(resource_type.key)
        self.registry.remove(resource_type.key)

    # ---- conveniences for the simulated controllers ----------------------------------------

    def mutate(
        self,
        key: str,
        namespace: str,
        name: str,
        change: Callable[[Obj], bool | None],
        subresource: str = "",
    ) -> Obj | None:
        """Read, change a copy, write back. `change` returns False to skip the write."""
        rt = self._type(key)
        current = self.store.get(key, namespace if rt.namespaced else "", name)
        if current is None:
            return None
        copy = json_copy(current)
        if change(copy) is False:
            return current
        return self.update(rt, namespace, name, copy, subresource=subresource)

    def type_for(self, key: str) -> ResourceType:
        return self._type(key)


class _Stale(Exception):
    """The stored object changed while admission webhooks were called: the write starts over."""


ADMISSION_ATTEMPTS = 5
"""How often an admitted update or delete starts over before it answers 409 Conflict."""

T = TypeVar("T")


def _at_once(write: Coroutine[Any, Any, T]) -> T:
    """Run a write without admission control: it never waits, so one step completes it."""
    try:
        write.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    write.close()
    raise RuntimeError("a write without admission control waited")


def _placed(rt: ResourceType, namespace: str, meta: Obj) -> str:
    """The namespace of an object to create: the request's and the body's must agree."""
    if not rt.namespaced:
        meta.pop("namespace", None)
        return ""
    body_namespace = meta.get("namespace")
    if body_namespace and namespace and body_namespace != namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    namespace = namespace or body_namespace or ""
    meta["namespace"] = namespace
    return str(namespace)


def _options_object(kind: str, options: WriteOptions) -> Obj:
    """The Create/UpdateOptions an AdmissionReview carries: what the request set."""
    shown: Obj = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if options.dry_run:
        shown["dryRun"] = ["All"]
    if options.field_manager:
        shown["fieldManager"] = options.field_manager
    if options.strict:
        shown["fieldValidation"] = "Strict"
    return shown


_CHECKED = {"x-kubernetes-preserve-unknown-fields": True}
"""A schema that leaves a value as it is: no defaults, no pruning, no errors."""


def _ratchet(schema: Obj, value: Any, stored: Any) -> Obj:
    """Kubernetes' validation ratcheting for an update, first level: a field equal to the
    stored one was defaulted, pruned and validated when it was stored, so it is not walked
    again (for a Workload: its admission on every condition change, its spec and status when
    only metadata changes). Object-level rules of `value` itself still see every field; below
    the first level, schema.validate ratchets value by value."""
    properties = schema.get("properties")
    if not properties or not isinstance(value, dict) or not isinstance(stored, dict):
        return schema
    same = [k for k, v in value.items() if k in properties and k in stored and stored[k] == v]
    if not same:
        return schema
    return {**schema, "properties": {**properties, **dict.fromkeys(same, _CHECKED)}}


def _check_preconditions(rt: ResourceType, name: str, preconditions: Obj, meta: Obj) -> None:
    for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
        wanted = preconditions.get(field)
        if wanted and wanted != meta.get(field):
            raise conflict(
                rt.plural,
                rt.group,
                name,
                f"Precondition failed: {label} in precondition: {wanted}, {label} in object "
                f"meta: {meta.get(field)}",
            )


def _propagation_policy(rt: ResourceType, opts: Obj) -> str:
    """The deletion's propagation; batch/v1 Jobs default to Orphan, as in kube-apiserver."""
    policy = opts.get("propagationPolicy")
    if policy is None and opts.get("orphanDependents") is not None:
        policy = "Orphan" if opts["orphanDependents"] else "Background"
    if policy is None:
        policy = "Orphan" if rt.key == "batch/jobs" else "Background"
    if policy not in ("Orphan", "Background", "Foreground"):
        raise invalid(
            "DeleteOptions", "", "", [("propagationPolicy", f'Unsupported value: "{policy}"')]
        )
    return str(policy)


def _same_conditions(old: Any, new: Obj) -> bool:
    if not isinstance(old, dict):
        return False

    def strip(status: Obj) -> Obj:
        conditions = [
            {k: v for k, v in c.items() if k != "lastTransitionTime"}
            for c in status.get("conditions") or []
        ]
        return {**status, "conditions": conditions}

    return strip(old) == strip(new)


def _same_but_times(obj: Obj, current: Obj) -> bool:
    """Equal except for managedFields timestamps (a no-op apply)."""
    new_fields = obj["metadata"].get("managedFields")
    old_fields = current["metadata"].get("managedFields")
    if not new_fields or not old_fields or len(new_fields) != len(old_fields):
        return False

    def strip(entries: list[Obj]) -> list[Obj]:
        return [{k: v for k, v in e.items() if k != "time"} for e in entries]

    if strip(new_fields) != strip(old_fields):
        return False
    rest = {**obj, "metadata": {**obj["metadata"], "managedFields": None}}
    old = {**current, "metadata": {**current["metadata"], "managedFields": None}}
    return rest == old


def _spec_of(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")} | {
        "__deletion": obj["metadata"].get("deletionTimestamp")
    }


def _sort_key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or ''}/{meta['name']}"
