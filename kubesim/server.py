"""The HTTP face of the emulated API server (aiohttp): routing of Kubernetes REST paths,
bearer-token authentication, content negotiation (JSON, YAML, Table) and streaming watches."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import HttpVersion11, web

from kueue_api.api_errors import (
    ApiError,
    bad_request,
    method_not_allowed,
    not_found,
    unauthorized,
    unsupported_media_type,
)

from . import discovery, event_versions, jsoncodec, tables
from .aggregator import Aggregator
from .api import (
    APPLY_PATCH,
    APPLY_PATCH_CBOR,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    Api,
    WriteOptions,
)
from .protobuf import decode_object
from .resources import ResourceType
from .reviews import USER as ADMIN_USER
from .reviews import review_answer
from .selectors import (
    fields_match,
    labels_match,
    parse_field_selector,
    parse_label_selector,
)
from .store import Event, Watcher
from .tokens import TokenIssuer
from .webhooks import RequestAdmission, Webhooks

log = logging.getLogger("kubesim.server")

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})
DEFAULT_WATCH_TIMEOUT = 1800.0
_TYPE_META = ("kind", "apiVersion")
BOOKMARK_INTERVAL = 5.0
USER_KEY: web.RequestKey[dict[str, Any] | None] = web.RequestKey("kubesim.user", object)  # type: ignore[arg-type]
# Kinds whose DELETE answers the deleted object even when it is gone (ReturnDeletedObject).
RETURN_DELETED_OBJECT = frozenset({"/pods", "/namespaces"})
MAX_BODY = 64 * 1024 * 1024


@dataclass(frozen=True)
class WatchRequest:
    """A watch's parameters, parsed from the query."""

    namespace: str | None
    since: int | None
    predicate: Callable[[dict[str, Any]], bool] | None
    timeout: float
    bookmarks: bool
    send_initial: bool
    api_version: str
    version_override: str | None
    encode: Callable[[str, Event], bytes] | None


@dataclass(frozen=True)
class Route:
    """A parsed resource path."""

    resource_type: ResourceType
    version: str
    namespace: str  # "" when cluster-scoped or across all namespaces
    name: str
    subresource: str
    # Set when the path is a type served over another's storage (events.k8s.io/v1 Events over
    # core/v1 Events): `resource_type` is then the storage's type, `served` the path's.
    served: ResourceType | None = None

    @property
    def shown(self) -> ResourceType:
        """The type the client asked for, which names the answers."""
        return self.served or self.resource_type

    def view(self, obj: dict[str, Any]) -> dict[str, Any]:
        """A stored object as the path's API encodes it."""
        return event_versions.to_events_v1(obj) if self.served is not None else obj

    def stored(self, body: Any) -> Any:
        """A request body of the path's API as the storage's type."""
        return event_versions.to_core(body) if self.served is not None else body


def _json_response(body: Any, status: int = 200, content_type: str = JSON) -> web.Response:
    return web.Response(
        body=jsoncodec.dumps(body), status=status, headers={"Content-Type": content_type}
    )


def _error_response(error: ApiError) -> web.Response:
    return _json_response(error.status(), status=error.code)


def _bool(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes")


def _parse_body(raw: bytes, content_type: str) -> Any:
    if content_type == PROTOBUF:
        return decode_object(raw) if raw else None
    if "protobuf" in content_type or "cbor" in content_type:
        raise unsupported_media_type(content_type)
    if not raw:
        return None
    if "yaml" in content_type:
        try:
            return jsoncodec.loads(raw)
        except ValueError:
            pass
        try:
            return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as error:
            raise bad_request(f"the request body is not valid YAML: {error}") from error
    try:
        return jsoncodec.loads(raw)
    except ValueError as error:
        raise bad_request(f"the request body is not valid JSON: {error}") from error


class ApiServer:
    """aiohttp application serving one cluster's API."""

    def __init__(
        self,
        api: Api,
        tokens: frozenset[str],
        bookmark_interval: float = BOOKMARK_INTERVAL,
        issuer: TokenIssuer | None = None,
        webhooks: Webhooks | None = None,
        aggregator: Aggregator | None = None,
    ) -> None:
        self.api = api
        self.aggregator = aggregator
        self.issuer = issuer or TokenIssuer(api)
        self.webhooks = webhooks
        self.bookmark_interval = bookmark_interval
        self.tokens = tokens
        self._tokens_header = frozenset(f"Bearer {token}" for token in tokens)
        self._discovery_cache: dict[tuple[str, int], bytes] = {}
        self._watch_tasks: set[asyncio.Task[Any]] = set()

    def web_server(self) -> web.Server:
        """aiohttp's low-level server with `dispatch` as its only handler.

        Not a web.Application: kubesim routes every path itself, and an Application's router
        would first try each prefix of every path against its one catch-all route."""
        return web.Server(self._checked_dispatch, request_factory=self._request, access_log=None)

    def _request(
        self,
        message: Any,
        payload: Any,
        protocol: Any,
        writer: Any,
        task: asyncio.Task[None],
    ) -> web.BaseRequest:
        return web.BaseRequest(
            message,
            payload,
            protocol,
            writer,
            task,
            asyncio.get_running_loop(),
            client_max_size=MAX_BODY,
        )

    async def _checked_dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        """`Expect: 100-continue` answered as an aiohttp Application does, then dispatch."""
        expect = request.headers.get("Expect")
        if expect and request.version == HttpVersion11:
            if expect.lower() != "100-continue":
                return web.Response(status=417, text=f"Unknown Expect: {expect}")
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            request.writer.output_size = 0
        return await self.dispatch(request)

    # ---- entry -------------------------------------------------------------------------

    async def dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        try:
            if path not in PUBLIC_PATHS:
                request[USER_KEY] = self._authenticate(request.headers.get("Authorization"))
            self.api.warnings.clear()
            return await self._route(request, path)
        except ApiError as error:
            return _error_response(error)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as error:  # never a traceback to the client
            log.exception("internal error serving %s %s", request.method, path)
            return _error_response(
                ApiError(500, "InternalError", f"Internal error occurred: {error}")
            )

    def _authenticate(self, header: str | None) -> dict[str, Any] | None:
        """None for the cluster's admin token; the user of a ServiceAccount token kubesim
        issued; 401 for anything else."""
        if header in self._tokens_header:
            return None
        if header and header.startswith("Bearer "):
            user = self.issuer.user(header[len("Bearer ") :])
            if user is not None:
                return user
        raise unauthorized()

    async def _route(self, request: web.BaseRequest, path: str) -> web.StreamResponse:
        parts = [p for p in path.split("/") if p]
        if not parts:
            return _json_response({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/version"]})
        head = parts[0]
        if head in ("healthz", "livez", "readyz"):
            return web.Response(text="ok")
        if head == "version":
            return _json_response(discovery.KUBERNETES_VERSION)
        if head == "openapi":
            return self._openapi(parts)
        if head == "api":
            if len(parts) == 1:
                return self._discovery(request, core=True)
            if len(parts) == 2:
                if parts[1] != "v1":
                    raise not_found("", "", path)
                return self._cached(
                    "api/v1", lambda: discovery.api_resource_list(self.api.registry, "", "v1")
                )
            return await self._resource(request, "", parts[1], parts[2:])
        if head == "apis":
            if len(parts) == 1:
                return self._discovery(request, core=False)
            group = parts[1]
            if len(parts) == 2:
                document = discovery.api_group(self.api.registry, group)
                if document is None:
                    raise ApiError(
                        404, "NotFound", "the server could not find the requested resource"
                    )
                return _json_response(document)
            version = parts[2]
            if self.aggregator is not None:
                api_service = self.aggregator.api_service(group, version)
                if api_service is not None:
                    user = request.get(USER_KEY) or ADMIN_USER
                    return await self.aggregator.proxy(request, api_service, user)
            if len(parts) == 3:
                if not self.api.registry.in_group_version(group, version):
                    raise ApiError(
                        404, "NotFound", "the server could not find the requested resource"
                    )
                return self._cached(
                    f"apis/{group}/{version}",
                    lambda: discovery.api_resource_list(self.api.registry, group, version),
                )
            return await self._resource(request, group, version, parts[3:])
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def _cached(self, key: str, build: Any, content_type: str = JSON) -> web.Response:
        generation = self.api.registry.generation
        cache_key = (key, generation)
        body = self._discovery_cache.get(cache_key)
        if body is None and any(g != generation for _, g in self._discovery_cache):
            self._discovery_cache.clear()  # served types changed: forget older documents
        if body is None:
            body = jsoncodec.dumps(build())
            self._discovery_cache[cache_key] = body
        return web.Response(body=body, headers={"Content-Type": content_type})

    def _discovery(self, request: web.BaseRequest, *, core: bool) -> web.Response:
        accept = request.headers.get("Accept", "")
        if "as=APIGroupDiscoveryList" in accept:
            first = next(
                (part for part in accept.split(",") if "as=APIGroupDiscoveryList" in part), ""
            )
            if "v=v2beta1" in first and "v=v2;" not in accept:
                content_type, api_version = (
                    discovery.AGGREGATED_V2BETA1,
                    "apidiscovery.k8s.io/v2beta1",
                )
            else:
                content_type, api_version = discovery.AGGREGATED_V2, "apidiscovery.k8s.io/v2"
            return self._cached(
                f"aggregated/{core}/{api_version}",
                lambda: discovery.aggregated(self.api.registry, core=core, api_version=api_version),
                content_type,
            )
        if core:
            return _json_response(discovery.api_versions())
        return self._cached("apis", lambda: discovery.api_group_list(self.api.registry))

    def _openapi(self, parts: list[str]) -> web.Response:
        if len(parts) >= 2 and parts[1] == "v3":
            if len(parts) == 2:
                return _json_response(discovery.openapi_root(self.api.registry))
            if parts[2] == "api" and len(parts) == 4:
                group, version = "", parts[3]
            elif parts[2] == "apis" and len(parts) == 5:
                group, version = parts[3], parts[4]
            else:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            document = discovery.openapi_group_version(self.api.registry, group, version)
            if document is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return self._cached(f"openapi/{group}/{version}", lambda: document)
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    # ---- resources ---------------------------------------------------------------------

    def _parse_route(self, group: str, version: str, rest: list[str]) -> tuple[Route, bool]:
        """Route and whether the path is a legacy /watch/ path."""
        legacy_watch = False
        if rest and rest[0] == "watch":
            legacy_watch = True
            rest = rest[1:]
        registry = self.api.registry
        namespace = ""
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and (rt := registry.lookup(group, version, rest[2])) is not None
            and rt.namespaced
            and not (group == "" and rest[2] in ("status", "finalize"))
        ):
            namespace = rest[1]
            rest = rest[2:]
        if not rest:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        resource_type = registry.lookup(group, version, rest[0])
        if resource_type is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else ""
        subresource = rest[2] if len(rest) == 3 else ""
        if (
            subresource
            and subresource not in resource_type.subresources
            and not (resource_type.key == "/namespaces" and subresource == "finalize")
        ):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return Route(resource_type, version, namespace, name, subresource), legacy_watch

    async def _resource(
        self, request: web.BaseRequest, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        route, legacy_watch = self._parse_route(group, version, rest)
        if route.resource_type.key == event_versions.EVENTS_V1_KEY:
            core = Route(
                self.api.type_for(event_versions.CORE_EVENTS_KEY),
                "v1",
                route.namespace,
                route.name,
                "",
                route.resource_type,
            )
            try:
                return await self._served_resource(request, core, legacy_watch)
            except ApiError as error:
                raise _renamed(error, route.resource_type) from None
        return await self._served_resource(request, route, legacy_watch)

    async def _served_resource(
        self, request: web.BaseRequest, route: Route, legacy_watch: bool
    ) -> web.StreamResponse:
        if route.resource_type.review:
            if request.method != "POST" or route.name:
                raise method_not_allowed()
            body = _parse_body(await request.read(), request.content_type)
            user = request.get(USER_KEY)
            return _json_response(review_answer(route.resource_type, body, user), 201)
        if not route.name:
            return await self._collection(request, route, legacy_watch)
        if legacy_watch:
            return await self._watch(request, route, field_name=route.name)
        if route.subresource == "token":
            if request.method != "POST":
                raise method_not_allowed()
            body = _parse_body(await request.read(), request.content_type)
            issued = self.issuer.token_request(route.namespace, route.name, body)
            return _json_response(issued, 201)
        if route.subresource in ("binding", "log", "finalize"):
            return await self._special_subresource(request, route)
        method = request.method
        if method == "GET":
            obj = self.api.get(route.resource_type, route.namespace, route.name)
            return self._object_response(request, route, obj)
        if method == "PUT":
            body = route.stored(_parse_body(await request.read(), request.content_type))
            options = _write_options(request.query, "UpdateOptions")
            admission = self._admission(request, route)
            if admission is None:
                updated = self.api.update(
                    route.resource_type,
                    route.namespace,
                    route.name,
                    body,
                    route.version,
                    route.subresource,
                    options,
                )
            else:
                updated = await self.api.admitted_update(
                    admission,
                    route.resource_type,
                    route.namespace,
                    route.name,
                    body,
                    route.version,
                    route.subresource,
                    options,
                )
                self._add_warnings(admission)
            return self._object_response(request, route, updated)
        if method == "PATCH":
            return await self._patch(request, route)
        if method == "DELETE":
            return await self._delete(request, route)
        raise method_not_allowed()

    async def _collection(
        self, request: web.BaseRequest, route: Route, legacy_watch: bool
    ) -> web.StreamResponse:
        method = request.method
        if method == "GET":
            if legacy_watch or _bool(request.query.get("watch")):
                return await self._watch(request, route)
            return self._list(request, route)
        if method == "POST":
            body = route.stored(_parse_body(await request.read(), request.content_type))
            if route.resource_type.from_crd and isinstance(body, dict) and not body.get("kind"):
                # Custom resources are decoded as unstructured objects, which need a kind.
                raise bad_request(
                    f"the object provided is unrecognized (must be of type "
                    f"{route.resource_type.kind}): Object 'Kind' is missing in "
                    f"'{jsoncodec.dumps(body).decode()}'"
                )
            options = _write_options(request.query, "CreateOptions")
            admission = self._admission(request, route)
            if admission is None:
                created = self.api.create(
                    route.resource_type, route.namespace, body, route.version, options
                )
            else:
                created = await self.api.admitted_create(
                    admission, route.resource_type, route.namespace, body, route.version, options
                )
                self._add_warnings(admission)
            return self._object_response(request, route, created, 201)
        if method == "DELETE":
            return await self._delete_collection(request, route)
        raise method_not_allowed()

    def _admission(self, request: web.BaseRequest, route: Route) -> RequestAdmission | None:
        """Admission webhooks for this write, or None when none are configured (most clusters:
        a check of two store buckets) or they cannot apply (webhook configurations themselves,
        events.k8s.io served over core Events)."""
        webhooks = self.webhooks
        if (
            webhooks is None
            or not webhooks.configured()
            or route.served is not None
            or not webhooks.applies_to(route.resource_type.key)
        ):
            return None
        return webhooks.for_request(request.get(USER_KEY))

    def _add_warnings(self, admission: RequestAdmission) -> None:
        """The webhooks' warnings first, then the API's own, in the Warning header."""
        self.api.warnings[:0] = admission.warnings

    async def _special_subresource(self, request: web.BaseRequest, route: Route) -> web.Response:
        """pods/binding (POST), pods/log (GET) and namespaces/finalize."""
        rt = route.resource_type
        if route.subresource == "binding":
            if request.method != "POST":
                raise method_not_allowed()
            self._bind(route, _parse_body(await request.read(), request.content_type))
            success = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "code": 201,
            }
            return _json_response(success, 201)
        if route.subresource == "log":
            if request.method != "GET":
                raise method_not_allowed()
            pod = self.api.get(rt, route.namespace, route.name)
            return web.Response(
                text=_pod_log(pod, request.query.get("container", "")), content_type="text/plain"
            )
        return self._object_response(request, route, self.api.get(rt, "", route.name))

    async def _patch(self, request: web.BaseRequest, route: Route) -> web.Response:
        rt = route.resource_type
        content_type = request.content_type
        body = _parse_body(await request.read(), content_type)
        applying = content_type in (APPLY_PATCH, APPLY_PATCH_CBOR)
        if applying and route.served is not None:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"kubesim does not serve apply patches for {route.served.group_resource}; "
                f"accepted media types include: {JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_PATCH}",
            )
        existed = (
            self.api.store.get(rt.key, route.namespace if rt.namespaced else "", route.name)
            is not None
        )
        options = _write_options(request.query, "PatchOptions")
        admission = self._admission(request, route)
        if admission is None:
            patched = self.api.patch(
                rt,
                route.namespace,
                route.name,
                content_type,
                body,
                route.version,
                route.subresource,
                options,
                view=(event_versions.to_events_v1, event_versions.to_core)
                if route.served
                else None,
            )
        else:
            patched = await self.api.admitted_patch(
                admission,
                rt,
                route.namespace,
                route.name,
                content_type,
                body,
                route.version,
                route.subresource,
                options,
            )
            self._add_warnings(admission)
        return self._object_response(
            request, route, patched, 201 if applying and not existed else 200
        )

    async def _delete(self, request: web.BaseRequest, route: Route) -> web.Response:
        query = request.query
        delete_options = _parse_body(await request.read(), request.content_type) or {}
        if not isinstance(delete_options, dict):
            raise bad_request("DeleteOptions must be an object")
        if "propagationPolicy" in query:
            delete_options["propagationPolicy"] = query["propagationPolicy"]
        if "orphanDependents" in query:
            delete_options["orphanDependents"] = _bool(query["orphanDependents"])
        dry_run = delete_options.get("dryRun")
        if dry_run is not None and not isinstance(dry_run, list):
            raise bad_request("DeleteOptions.dryRun must be a list")
        options = _write_options(query, "DeleteOptions", extra_dry_run=dry_run or ())
        rt = route.resource_type
        admission = self._admission(request, route)
        if admission is None:
            deleted = self.api.delete(rt, route.namespace, route.name, delete_options, options)
        else:
            deleted = await self.api.admitted_delete(
                admission, rt, route.namespace, route.name, delete_options, options, route.version
            )
            self._add_warnings(admission)
        meta = deleted["metadata"]
        kept = (
            bool(meta.get("finalizers"))
            if options.dry_run
            else self.api.store.get(rt.key, route.namespace if rt.namespaced else "", route.name)
            is not None
        )
        if kept or rt.key in RETURN_DELETED_OBJECT:
            return self._object_response(request, route, deleted)
        # A removed object is answered with a Success Status naming it, as kube-apiserver's
        # generic registry does for kinds without ReturnDeletedObject.
        details: dict[str, Any] = {"name": meta.get("name", "")}
        if route.shown.group:
            details["group"] = route.shown.group
        details["kind"] = route.shown.plural
        details["uid"] = meta.get("uid", "")
        success = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }
        return _json_response(success)

    def _bind(self, route: Route, body: Any) -> None:
        if not isinstance(body, dict):
            raise bad_request("a Binding body is required")
        target = (body.get("target") or {}).get("name")
        if not target:
            raise bad_request("Binding.target.name is required")
        from .scheduling import bind_pod

        bind_pod(self.api, route.namespace, route.name, str(target))

    def _object_response(
        self, request: web.BaseRequest, route: Route, obj: dict[str, Any], status: int = 200
    ) -> web.Response:
        rt = route.resource_type
        if rt.from_crd and obj.get("apiVersion") != rt.api_version(route.version):
            obj = {**obj, "apiVersion": rt.api_version(route.version)}
        obj = route.view(obj)
        headers = {"Content-Type": JSON}
        if self.api.warnings:
            headers["Warning"] = ", ".join(f'299 - "{w}"' for w in self.api.warnings[:10])
        if tables.wants_table(request.headers.get("Accept", "")):
            body = tables.table(
                rt,
                route.version,
                [obj],
                include_object=request.query.get("includeObject", "PartialObjectMetadata"),
                list_meta={"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            )
            return web.Response(body=jsoncodec.dumps(body), status=status, headers=headers)
        return web.Response(body=jsoncodec.dumps(obj), status=status, headers=headers)

    def _selectors(self, request: web.BaseRequest, route: Route) -> tuple[Any, Any]:
        labels = parse_label_selector(request.query.get("labelSelector", ""))
        field_text = request.query.get("fieldSelector", "")
        if route.served is not None:
            field_text = event_versions.core_field_selector(field_text)
        fields = parse_field_selector(
            field_text,
            route.resource_type.key,
            route.resource_type.kind,
        )
        return labels, fields

    def _list(self, request: web.BaseRequest, route: Route) -> web.Response:
        rt = route.resource_type
        labels, fields = self._selectors(request, route)
        try:
            limit = int(request.query.get("limit", "0") or 0)
        except ValueError as error:
            raise bad_request("limit must be an integer") from error
        result = self.api.list(
            rt,
            route.namespace if rt.namespaced and route.namespace else None,
            labels,
            fields,
            limit,
            request.query.get("continue", ""),
        )
        meta: dict[str, Any] = {"resourceVersion": result.resource_version}
        if result.continue_token:
            meta["continue"] = result.continue_token
            meta["remainingItemCount"] = result.remaining
        items = [route.view(item) for item in result.items] if route.served else result.items
        api_version = route.shown.api_version(route.version)
        if tables.wants_table(request.headers.get("Accept", "")):
            body = tables.table(
                rt,
                route.version,
                items,
                include_object=request.query.get("includeObject", "PartialObjectMetadata"),
                list_meta=meta,
            )
            return _json_response(body)
        if rt.from_crd:
            items = [
                item
                if item.get("apiVersion") == api_version
                else {**item, "apiVersion": api_version}
                for item in items
            ]
        else:
            # Built-in kinds are typed on the list only: kube-apiserver encodes its items with
            # empty TypeMeta (clients take the kind from the list). Custom resources are
            # unstructured and keep theirs.
            items = [
                {key: value for key, value in item.items() if key not in _TYPE_META}
                for item in items
            ]
        return _json_response(
            {"kind": f"{rt.kind}List", "apiVersion": api_version, "metadata": meta, "items": items}
        )

    async def _delete_collection(self, request: web.BaseRequest, route: Route) -> web.Response:
        rt = route.resource_type
        labels, fields = self._selectors(request, route)
        raw = await request.read()
        delete_options = _parse_body(raw, request.content_type) or {}
        if "propagationPolicy" in request.query:
            delete_options["propagationPolicy"] = request.query["propagationPolicy"]
        result = self.api.list(
            rt, route.namespace or None if rt.namespaced else None, labels, fields
        )
        admission = self._admission(request, route)
        deleted = []
        for obj in result.items:
            meta = obj["metadata"]
            namespace, name = meta.get("namespace", ""), meta["name"]
            try:
                if admission is None:
                    deleted.append(self.api.delete(rt, namespace, name, dict(delete_options)))
                else:
                    deleted.append(
                        await self.api.admitted_delete(
                            admission,
                            rt,
                            namespace,
                            name,
                            dict(delete_options),
                            version=route.version,
                        )
                    )
            except ApiError as error:
                if error.code != 404:
                    raise
        if admission is not None:
            self._add_warnings(admission)
        return _json_response(
            {
                "kind": f"{rt.kind}List",
                "apiVersion": route.shown.api_version(route.version),
                "metadata": {"resourceVersion": str(self.api.store.rv)},
                "items": [route.view(obj) for obj in deleted],
            }
        )

    # ---- watch -------------------------------------------------------------------------

    def _watch_request(
        self, request: web.BaseRequest, route: Route, field_name: str
    ) -> WatchRequest:
        rt = route.resource_type
        query = request.query
        labels, fields = self._selectors(request, route)
        if field_name:
            fields = parse_field_selector(f"metadata.name={field_name}", rt.key, rt.kind)
        predicate = None
        if labels or fields:

            def predicate(obj: dict[str, Any]) -> bool:
                return labels_match(labels, obj["metadata"].get("labels")) and fields_match(
                    fields, obj
                )

        rv_text = query.get("resourceVersion", "")
        send_initial = _bool(query.get("sendInitialEvents"))
        since: int | None = None
        if rv_text not in ("", "0") and not send_initial:
            try:
                since = int(rv_text)
            except ValueError as error:
                raise bad_request(f"invalid resource version: {rv_text}") from error
        timeout = DEFAULT_WATCH_TIMEOUT
        if query.get("timeoutSeconds"):
            try:
                timeout = float(query["timeoutSeconds"])
            except ValueError as error:
                raise bad_request("timeoutSeconds must be a number") from error
        as_table = tables.wants_table(request.headers.get("Accept", ""))
        include = query.get("includeObject", "PartialObjectMetadata")
        return WatchRequest(
            namespace=route.namespace if rt.namespaced and route.namespace else None,
            since=since,
            predicate=predicate,
            timeout=timeout,
            bookmarks=_bool(query.get("allowWatchBookmarks")),
            send_initial=send_initial,
            api_version=route.shown.api_version(route.version),
            version_override=rt.api_version(route.version) if rt.from_crd else None,
            encode=(
                self._table_encoder(rt, route.version, include)
                if as_table
                else _view_encoder(route)
                if route.served
                else None
            ),
        )

    async def _watch(
        self, request: web.BaseRequest, route: Route, field_name: str = ""
    ) -> web.StreamResponse:
        rt = route.resource_type
        wanted = self._watch_request(request, route, field_name)
        response = web.StreamResponse(
            status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache"}
        )
        response.enable_chunked_encoding()
        try:
            watcher = self.api.store.watch(rt.key, wanted.namespace, wanted.since, wanted.predicate)
        except ApiError as error:  # 410 Expired travels as an ERROR event, as kube-apiserver does
            await response.prepare(request)
            await response.write(
                jsoncodec.dumps({"type": "ERROR", "object": error.status()}) + b"\n"
            )
            await response.write_eof()
            return response
        try:
            await response.prepare(request)
            await self._stream(response, watcher, rt, wanted)
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            self.api.store.unwatch(watcher)
        with contextlib.suppress(ConnectionResetError, ConnectionError):
            await response.write_eof()
        return response

    async def _stream(
        self, response: web.StreamResponse, watcher: Watcher, rt: ResourceType, wanted: WatchRequest
    ) -> None:
        store = self.api.store

        async def flush() -> None:
            # Everything buffered is written before a bookmark, so a bookmark's version never
            # skips an event the client has not received.
            while watcher.buffer:
                events = watcher.take()
                await response.write(_encode_events(events, wanted.version_override, wanted.encode))

        deadline = time.monotonic() + wanted.timeout
        last_write = time.monotonic()
        if wanted.send_initial:
            await flush()
            await response.write(self._bookmark(rt, wanted.api_version, store.rv, initial_end=True))
        while not watcher.closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            events = await watcher.wait(min(remaining, self.bookmark_interval))
            if events:
                await response.write(_encode_events(events, wanted.version_override, wanted.encode))
                last_write = time.monotonic()
            elif wanted.bookmarks and time.monotonic() - last_write >= self.bookmark_interval:
                await flush()
                await response.write(self._bookmark(rt, wanted.api_version, store.rv))
                last_write = time.monotonic()

    def _bookmark(
        self, rt: ResourceType, api_version: str, rv: int, initial_end: bool = False
    ) -> bytes:
        metadata: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
        return (
            jsoncodec.dumps(
                {
                    "type": "BOOKMARK",
                    "object": {"kind": rt.kind, "apiVersion": api_version, "metadata": metadata},
                }
            )
            + b"\n"
        )

    def _table_encoder(self, rt: ResourceType, version: str, include: str) -> Any:
        first = [True]

        def encode(event_type: str, event: Event) -> bytes:
            body = tables.table(rt, version, [event.obj], include_object=include, headers=first[0])
            body["metadata"] = {"resourceVersion": str(event.rv)}
            first[0] = False
            return jsoncodec.dumps({"type": event_type, "object": body}) + b"\n"

        return encode


def _encode_events(events: list[tuple[str, Event]], api_version: str | None, encode: Any) -> bytes:
    if encode is not None:
        return b"".join(encode(event_type, event) for event_type, event in events)
    lines = []
    for event_type, event in events:
        if event_type == event.type:
            lines.append(event.line(api_version))
        else:
            obj = event.obj
            if api_version and obj.get("apiVersion") != api_version:
                obj = {**obj, "apiVersion": api_version}
            lines.append(jsoncodec.dumps({"type": event_type, "object": obj}) + b"\n")
    return b"".join(lines)


def _view_encoder(route: Route) -> Callable[[str, Event], bytes]:
    """Watch events with each object as the path's API encodes it."""

    def encode(event_type: str, event: Event) -> bytes:
        return jsoncodec.dumps({"type": event_type, "object": route.view(event.obj)}) + b"\n"

    return encode


def _renamed(error: ApiError, served: ResourceType) -> ApiError:
    """An error about the storage's type as kube words it for the served one (its Status
    names the resource the client asked for: `events.events.k8s.io "x" not found`)."""
    details = error.details
    if details.get("kind") != served.plural or "group" in details:
        return error
    renamed = {"name": details.get("name", "")} if "name" in details else {}
    renamed |= {"group": served.group} | {k: v for k, v in details.items() if k != "name"}
    message = error.message.replace(f'{served.plural} "', f'{served.group_resource} "', 1)
    return ApiError(error.code, error.reason, message, renamed)


def _pod_log(pod: dict[str, Any], container: str) -> str:
    """kubesim runs no containers; the log says what the simulated kubelet did."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    chosen = container or (names[0] if names else "")
    if chosen not in names:
        raise bad_request(f"container {chosen} is not valid for pod {pod['metadata']['name']}")
    status: dict[str, Any] = next((s for s in statuses if s.get("name") == chosen), {})
    state = status.get("state") or {}
    lines = [f"kubesim: simulated container {chosen} ({status.get('image', '')})"]
    if "running" in state:
        lines.append(f"kubesim: running since {state['running'].get('startedAt')}")
    if "terminated" in state:
        terminated = state["terminated"]
        lines.append(
            f"kubesim: exited with code {terminated.get('exitCode')} at "
            f"{terminated.get('finishedAt')}"
        )
    if not state:
        lines.append("kubesim: not started")
    return "\n".join(lines) + "\n"


def _write_options(query: Any, options_kind: str, extra_dry_run: Any = ()) -> WriteOptions:
    """dryRun, fieldManager, fieldValidation and force from the query string (and, for
    DELETE, dryRun from the DeleteOptions body, which is where kubectl sends it)."""
    dry_run = [*query.getall("dryRun", []), *extra_dry_run]
    unsupported = [value for value in dry_run if value != "All"]
    if unsupported:
        values = ", ".join(f'"{value}"' for value in unsupported)
        what = f'Unsupported value: [{values}]: supported values: "All"'
        raise ApiError(
            422,
            "Invalid",
            f'{options_kind}.meta.k8s.io "" is invalid: dryRun: {what}',
            {
                "group": "meta.k8s.io",
                "kind": options_kind,
                "causes": [
                    {"reason": "FieldValueNotSupported", "message": what, "field": "dryRun"}
                ],
            },
        )
    return WriteOptions(
        dry_run=bool(dry_run),
        field_manager=query.get("fieldManager", ""),
        strict=query.get("fieldValidation", "") == "Strict",
        force=_bool(query.get("force")),
    )
