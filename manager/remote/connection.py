"""One worker cluster: its client, rate limiter, list/watch caches and connection health.

The watch loop is our own: list, then watch from the list's resourceVersion; a 410 Gone (or any
dropped stream) leads to a relist, not a failure. Only a relist that fails marks the cluster
Unreachable and starts the worker-lost clock; reconnects back off like Kueue's (5 s * 2^n,
at most 320 s, both configurable).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import aiohttp
import orjson
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import load_kube_config_from_dict
from kubernetes_asyncio.config.config_exception import ConfigException

from kueue_api.api_resources import KUEUE_GROUP, KUEUE_VERSION
from kueue_api.jobs import BATCH_JOB, BUILT_IN, DispatchedKind, JobKinds
from kueue_api.jobs.base import MULTIKUEUE_ORIGIN_LABEL
from manager import states
from manager.dispatch.timing import reconnect_delay
from manager.remote.api_errors import status_message
from manager.remote.ratelimit import TokenBucket

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name)

WORKLOADS = "workloads"
JOBS = BATCH_JOB.resource.plural


K = TypeVar("K", bound=DispatchedKind)


def job_caches(kinds: JobKinds[DispatchedKind]) -> dict[str, str]:
    """The cache of each job kind the manager dispatches (WorkloadRow.kind -> its plural)."""
    return {kind.resource.kind: kind.resource.plural for kind in kinds}


def kinds_by_cache(kinds: JobKinds[K]) -> dict[str, K]:
    """The job kind each of those caches holds. Every kind but batch/v1 Job is optional: a
    cluster that does not serve it (its CRD is not installed) has an empty cache of it."""
    return {kind.resource.plural: kind for kind in kinds}


LOCAL_QUEUES = "localqueues"
# Last states of deleted objects kept per kind; the manager reads one within seconds of the
# deletion, so this bounds memory without losing what it needs.
TOMBSTONES_KEPT = 20_000


class ConnectionListener(Protocol):
    """What the dispatcher hears from a connection."""

    async def cluster_connected(self, connection: ClusterConnection) -> None:
        """Called after a full relist, before the connection counts as ready."""

    async def cluster_unhealthy(
        self, connection: ClusterConnection, state: str, reason: str, message: str
    ) -> None: ...

    def object_changed(self, connection: ClusterConnection, kind: str, key: Key) -> None: ...


@dataclass(frozen=True)
class ConnectionSettings:
    qps: float = 500.0
    burst: int = 1000
    backoff_base: float = 5.0
    backoff_cap: float = 320.0
    watch_timeout: int = 300
    request_timeout: float = 30.0
    # A frozen API server keeps its sockets open and answers nothing: while its watches run,
    # it is asked for /version this often, and counts as unreachable when no answer comes
    # within probe_timeout.
    probe_seconds: float = 10.0
    probe_timeout: float = 5.0
    # The job kinds dispatched: the built-in ones and the Configuration's declared ones.
    kinds: JobKinds[DispatchedKind] = BUILT_IN


# Environment variables aiohttp reads when trusting the environment (the agent's client skips
# the same lookups the same way).
_ENV_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "ws_proxy", "wss_proxy", "netrc")


def _skip_netrc(api: client.ApiClient) -> None:
    """Stop aiohttp reading ~/.netrc on a worker thread before every request.

    kubernetes-asyncio opens its session with trust_env, which means two thread hops per write
    (a tenth of the manager's time when dispatching). Kubeconfig credentials never come from
    netrc; the environment stays trusted when it names a proxy or a netrc file.
    """
    if any(os.environ.get(name) or os.environ.get(name.upper()) for name in _ENV_VARIABLES):
        return
    api.rest_client.pool_manager._trust_env = False


class _PlainJsonApiClient(client.ApiClient):
    """kubernetes-asyncio's client, minus its walk over request bodies.

    The library rebuilds every dict it sends, value by value, in case a generated model hides
    inside (a twelfth of the manager's CPU when dispatching). Everything the manager sends is
    plain JSON already (manifests parsed from JSON, dicts built here), so dicts go out as they
    are; anything else still takes the library's path.
    """

    def sanitize_for_serialization(self, obj: Any) -> Any:
        if isinstance(obj, dict):
            return obj
        return super().sanitize_for_serialization(obj)


class Unreachable(Exception):
    """The cluster did not answer a list; carries a short reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message

    @property
    def refused(self) -> bool:
        """The worker answered and will not let us (401, 403): asking again will not help
        until someone mends the manager's identity there."""
        return self.reason in _REFUSALS.values()


# A read the worker refuses, by HTTP status.
_REFUSALS = {401: "Unauthorized", 403: "Forbidden"}


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): relist."""


class ClusterConnection:
    def __init__(
        self,
        name: str,
        kubeconfig: dict[str, Any],
        *,
        origin: str,
        listener: ConnectionListener,
        settings: ConnectionSettings,
        count_write: Callable[[str, str], None] = lambda cluster, verb: None,
        selectors: dict[str, str | None] | None = None,
    ) -> None:
        self.name = name
        self.origin = origin
        self._kubeconfig = kubeconfig
        self._listener = listener
        self._settings = settings
        self._count_write = count_write
        self._bucket = TokenBucket(settings.qps, settings.burst)
        # The job kinds it lists and writes, and the cache each lives in.
        self.kinds = settings.kinds
        self.kinds_by_cache = kinds_by_cache(settings.kinds)
        self._api: client.ApiClient | None = None
        self._task: asyncio.Task[None] | None = None
        # Set by a write that got no answer in time: the health probe asks at once instead of
        # at its next period, so a hung API server is Unreachable within probe_timeout.
        self._probe_now = asyncio.Event()
        self.state = states.CLUSTER_PENDING
        self.reason: str | None = None
        self.message: str | None = None
        self.ready = False
        # Kind (a Kueue plural, or "jobs") -> label selector. Workers: our copies and their
        # LocalQueues; the manager cluster passes its own set.
        self.selectors: dict[str, str | None] = (
            selectors
            if selectors is not None
            else {
                LOCAL_QUEUES: None,
                WORKLOADS: f"{MULTIKUEUE_ORIGIN_LABEL}={origin}",
                **{cache: f"{MULTIKUEUE_ORIGIN_LABEL}={origin}" for cache in self.kinds_by_cache},
            }
        )
        self.caches: dict[str, dict[Key, dict[str, Any]]] = {kind: {} for kind in self.selectors}
        # Last state of objects seen deleted (a Job removed by TTL still tells how it ended).
        self.tombstones: dict[str, dict[Key, dict[str, Any]]] = {
            cache: {} for cache in (WORKLOADS, *self.kinds_by_cache)
        }
        # Optional kinds the cluster answered 404 for at the last list; not watched.
        self.unserved: set[str] = set()
        self.failures = 0

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"cluster-{self.name}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._close_client()
        self.ready = False

    async def _close_client(self) -> None:
        if self._api is not None:
            with contextlib.suppress(Exception):
                await self._api.close()
            self._api = None

    async def _build_client(self) -> client.ApiClient:
        configuration = client.Configuration()
        try:
            await load_kube_config_from_dict(self._kubeconfig, client_configuration=configuration)
        except (ConfigException, KeyError, TypeError, ValueError) as error:
            raise _InvalidKubeconfig(str(error)) from error
        configuration.connection_pool_maxsize = 32
        api = _PlainJsonApiClient(configuration=configuration)
        _skip_netrc(api)
        return api

    async def _run(self) -> None:
        while True:
            try:
                if self._api is None:
                    self._api = await self._build_client()
                versions = await self._list_all()
                self.failures = 0
                self.state = states.CLUSTER_CONNECTED
                self.reason = self.message = None
                await self._listener.cluster_connected(self)
                self.ready = True
                await self._watch_all(versions)
            except asyncio.CancelledError:
                raise
            except _InvalidKubeconfig as error:
                await self._unhealthy(
                    states.CLUSTER_INVALID_KUBECONFIG, "BadKubeConfig", str(error)
                )
                await self._close_client()
            except Unreachable as error:
                await self._unhealthy(states.CLUSTER_UNREACHABLE, error.reason, error.message)
            except Exception as error:  # a bug must not kill the connection for good
                log.exception("cluster %s: unexpected error", self.name)
                await self._unhealthy(states.CLUSTER_UNREACHABLE, "InternalError", repr(error))
            self.failures += 1
            await asyncio.sleep(
                reconnect_delay(
                    self.failures, self._settings.backoff_base, self._settings.backoff_cap
                )
            )

    async def _unhealthy(self, state: str, reason: str, message: str) -> None:
        self.ready = False
        self.state, self.reason, self.message = state, reason, message
        try:
            await self._listener.cluster_unhealthy(self, state, reason, message)
        except Exception:
            log.exception("cluster %s: recording its state failed", self.name)

    # ---- list / watch ----------------------------------------------------------------------

    def _selector(self, kind: str) -> str | None:
        return self.selectors[kind]

    async def _list_call(self, kind: str, **params: Any) -> Any:
        assert self._api is not None
        selector = self._selector(kind)
        if selector is not None:
            params["label_selector"] = selector
        custom = client.CustomObjectsApi(self._api)
        job_kind = self.kinds_by_cache.get(kind)
        if job_kind is None:
            return await custom.list_cluster_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, kind, **params
            )
        resource = job_kind.resource
        return await custom.list_cluster_custom_object(
            resource.group, resource.version, resource.plural, **params
        )

    async def _list(self, kind: str) -> str:
        """Replace the cache of `kind` with a fresh list; returns the list's resourceVersion."""
        try:
            response = await self._list_call(
                kind, _preload_content=False, _request_timeout=self._settings.request_timeout
            )
            optional = kind in self.kinds_by_cache and kind != JOBS
            if response.status == 404 and optional:
                # Unread responses raise nothing: an unserved kind answers a 404 Status.
                response.close()
                raise ApiException(status=404, reason="NotFound")
            body = orjson.loads(await response.read())
        except ApiException as error:
            if error.status != 404 or kind not in self.kinds_by_cache or kind == JOBS:
                if error.status == 404 and kind not in self.kinds_by_cache:
                    raise Unreachable(
                        "KueueNotInstalled", f"the cluster does not serve {KUEUE_GROUP} {kind}"
                    ) from error
                raise Unreachable(
                    "ClientConnectionFailed", f"list {kind}: {error.status} {error.reason}"
                ) from error
            self.unserved.add(kind)
            body = {"items": [], "metadata": {}}
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as error:
            raise Unreachable("ClientConnectionFailed", f"list {kind}: {error!r}") from error
        else:
            self.unserved.discard(kind)
        fresh: dict[Key, dict[str, Any]] = {}
        # kube-apiserver names the kind once, on the list ("JobList"); its items carry none
        # (watch events do). Readers of the cache see the same object either way.
        list_kind = str(body.get("kind") or "")
        item_kind = list_kind.removesuffix("List") if list_kind.endswith("List") else None
        for item in body.get("items") or []:
            if item_kind:
                item.setdefault("kind", item_kind)
                item.setdefault("apiVersion", body.get("apiVersion"))
            meta = item.get("metadata") or {}
            fresh[(meta.get("namespace") or "", meta.get("name") or "")] = item
        cache = self.caches[kind]
        gone = set(cache) - set(fresh)
        changed = [k for k, v in fresh.items() if cache.get(k) != v]
        for key in gone:
            self._tombstone(kind, key, cache[key])
        self.caches[kind] = fresh
        for key in gone | set(changed):
            self._listener.object_changed(self, kind, key)
        return str((body.get("metadata") or {}).get("resourceVersion") or "")

    async def _list_all(self) -> dict[str, str]:
        versions = {}
        for kind in self.selectors:
            versions[kind] = await self._list(kind)
        return versions

    async def _watch_all(self, versions: dict[str, str]) -> None:
        tasks = [
            asyncio.create_task(self._watch(kind, version), name=f"watch-{self.name}-{kind}")
            for kind, version in versions.items()
        ]
        tasks.append(asyncio.create_task(self._probe(), name=f"probe-{self.name}"))
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _probe(self) -> None:
        """Raise Unreachable once the API server stops answering a small request in time."""
        assert self._api is not None
        versions = client.VersionApi(self._api)
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._settings.probe_seconds):
                    await self._probe_now.wait()
            self._probe_now.clear()
            try:
                async with asyncio.timeout(self._settings.probe_timeout):
                    await versions.get_code()
            except (aiohttp.ClientError, TimeoutError, OSError, ApiException) as error:
                raise Unreachable(
                    "ClientConnectionFailed",
                    f"no answer to GET /version within {self._settings.probe_timeout:g}s: "
                    f"{error!r}",
                ) from error

    async def _watch(self, kind: str, version: str) -> None:
        while kind not in self.unserved:  # an unserved kind is listed again on reconnect only
            try:
                async for event in self._stream(kind, version):
                    version = self._apply(kind, event) or version
            except _Gone:
                version = await self._list(kind)
            except (aiohttp.ClientError, TimeoutError, OSError, ApiException, ValueError):
                # A dropped stream is not a lost worker: reconnect by relisting; only a failed
                # relist (Unreachable, raised from here) marks the cluster unhealthy.
                version = await self._list(kind)

    async def _stream(self, kind: str, version: str) -> AsyncIterator[dict[str, Any]]:
        timeout = self._settings.watch_timeout
        response = await self._list_call(
            kind,
            watch=True,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout,
            _preload_content=False,
            _request_timeout=aiohttp.ClientTimeout(total=None, sock_read=timeout + 30),
        )
        async with response:
            if response.status != 200:
                raise _Gone()  # e.g. its CRD was removed: the relist tells what holds now
            while True:
                line = await response.content.readline()
                if not line:
                    return
                if not line.strip():
                    continue
                event = orjson.loads(line)  # every event of every copy passes here
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    if status.get("code") == 410:
                        raise _Gone()
                    raise aiohttp.ClientPayloadError(f"watch error: {status.get('message')}")
                yield event

    def _apply(self, kind: str, event: dict[str, Any]) -> str | None:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        version = meta.get("resourceVersion")
        if event.get("type") == "BOOKMARK":
            return str(version) if version else None
        key = (meta.get("namespace") or "", meta.get("name") or "")
        cache = self.caches[kind]
        if event.get("type") == "DELETED":
            cache.pop(key, None)
            self._tombstone(kind, key, obj)
        else:
            cache[key] = obj
            grave = self.tombstones.get(kind, {}).get(key)
            if grave is not None and (grave.get("metadata") or {}).get("uid") != meta.get("uid"):
                # A new object of that name. The one whose delete was sent keeps its tombstone
                # through the updates the watch still shows of it.
                del self.tombstones[kind][key]
        self._listener.object_changed(self, kind, key)
        return str(version) if version else None

    def _tombstone(self, kind: str, key: Key, obj: dict[str, Any]) -> None:
        if kind in self.tombstones:
            graves = self.tombstones[kind]
            graves.pop(key, None)
            graves[key] = obj
            while len(graves) > TOMBSTONES_KEPT:  # oldest first: dicts keep insertion order
                graves.pop(next(iter(graves)))

    def _untombstone(self, kind: str, key: Key, obj: dict[str, Any] | None) -> None:
        """Take back the tombstone `_tombstone` made of `obj` (its delete was not done)."""
        if obj is not None and self.tombstones.get(kind, {}).get(key) is obj:
            del self.tombstones[kind][key]

    # ---- writes (rate limited, idempotent) -------------------------------------------------

    async def _write(self, verb: str, call: Callable[[], Awaitable[Any]]) -> Any:
        if self._api is None:
            raise Unreachable("NotConnected", f"cluster {self.name} is not connected")
        await self._bucket.acquire()
        self._count_write(self.name, verb)
        try:
            # A write to an API server that stopped answering must not hold its caller.
            async with asyncio.timeout(self._settings.request_timeout):
                result = await call()
            if isinstance(result, aiohttp.ClientResponse):
                # Asked for with _preload_content=False: the answer is not needed, and turning
                # it into the client's models (a V1Job, a V1Status) costs more than the call.
                async with result:
                    if not 200 <= result.status <= 299:
                        error = ApiException(status=result.status, reason=result.reason)
                        error.body = await result.read()
                        raise error
                return None
            return result
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            self._probe_now.set()
            raise Unreachable("ClientConnectionFailed", f"{verb}: {error!r}") from error

    async def create_workload(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """Create a Workload copy; an existing one is returned as None (it is already there)."""
        api = client.CustomObjectsApi(self._api)
        namespace = body["metadata"]["namespace"]
        try:
            created: dict[str, Any] = await self._write(
                "create",
                lambda: api.create_namespaced_custom_object(
                    KUEUE_GROUP, KUEUE_VERSION, namespace, WORKLOADS, body
                ),
            )
            return created
        except ApiException as error:
            if error.status == 409:
                return None
            raise

    async def delete_workload(self, namespace: str, name: str) -> None:
        """Delete a Workload copy. The copy as last seen becomes a tombstone before the delete
        is sent, so from then on (`stale_copy`) neither its admission in the cache nor an
        agent's report of it can win the workload; a delete that fails takes it back."""
        api = client.CustomObjectsApi(self._api)
        key = (namespace, name)
        seen = self.caches[WORKLOADS].get(key)
        if seen is not None:
            self._tombstone(WORKLOADS, key, seen)
        try:
            await self._write(
                "delete",
                lambda: api.delete_namespaced_custom_object(
                    KUEUE_GROUP, KUEUE_VERSION, namespace, WORKLOADS, name, _preload_content=False
                ),
            )
        except ApiException as error:
            if error.status != 404:
                self._untombstone(WORKLOADS, key, seen)
                raise
        except Unreachable:
            self._untombstone(WORKLOADS, key, seen)
            raise

    def stale_copy(self, namespace: str, name: str, uid: str) -> bool:
        """Whether `uid` is not the Workload copy of that name this cluster holds now: one
        deleted since (a tombstone), or another than the one the watch shows."""
        key = (namespace, name)
        grave = self.tombstones[WORKLOADS].get(key)
        if grave is not None and (grave.get("metadata") or {}).get("uid") == uid:
            return True
        live = (self.caches[WORKLOADS].get(key) or {}).get("metadata") or {}
        return bool(live.get("uid")) and live.get("uid") != uid

    async def create_job(self, body: dict[str, Any]) -> bool:
        """Create the copy of a job (of any kind of kueue_api.jobs); False when it exists."""
        found = self._settings.kinds.of(body)
        if found is None:  # the manager stores only supported kinds (manager.jobs.parse_job)
            raise ValueError(
                f"not a supported job kind: {body.get('apiVersion')} {body.get('kind')}"
            )
        resource = found.resource
        custom = client.CustomObjectsApi(self._api)
        try:
            await self._write(
                "create",
                lambda: custom.create_namespaced_custom_object(
                    resource.group,
                    resource.version,
                    body["metadata"]["namespace"],
                    resource.plural,
                    body,
                    _preload_content=False,
                ),
            )
            return True
        except ApiException as error:
            if error.status == 409:
                return False
            raise

    async def delete_job(self, namespace: str, name: str, kind: str = JOBS) -> None:
        """Delete the copy of a job in the cache `kind` (job_caches) with its pods; gone is
        fine."""
        resource = self.kinds_by_cache[kind].resource
        custom = client.CustomObjectsApi(self._api)
        try:
            await self._write(
                "delete",
                lambda: custom.delete_namespaced_custom_object(
                    resource.group,
                    resource.version,
                    namespace,
                    resource.plural,
                    name,
                    propagation_policy="Background",
                    _preload_content=False,
                ),
            )
        except ApiException as error:
            if error.status != 404:
                raise

    async def read_job(self, namespace: str, name: str, kind: str = JOBS) -> dict[str, Any] | None:
        """The copy of a job in the cache `kind` (job_caches), read from the API server rather
        than the cache; None when it does not exist. Unreachable when the worker cannot tell."""
        resource = self.kinds_by_cache[kind].resource
        call = client.CustomObjectsApi(self._connected()).get_namespaced_custom_object(
            resource.group, resource.version, namespace, resource.plural, name
        )
        found: dict[str, Any] | None = await self._read(call, missing_is_none=True)
        return found

    @property
    def api_client(self) -> client.ApiClient | None:
        """The connection's client, for callers that write other objects (None when down)."""
        return self._api

    async def read_custom(
        self, plural: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        """One Kueue object by name, or None when it does not exist."""
        api = client.CustomObjectsApi(self._connected())
        if namespace is None:
            call = api.get_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, plural, name)
        else:
            call = api.get_namespaced_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, namespace, plural, name
            )
        found: dict[str, Any] | None = await self._read(call, missing_is_none=True)
        return found

    async def read_priority_class(self, name: str) -> dict[str, Any] | None:
        """A PriorityClass (scheduling.k8s.io) by name, as JSON; None when it does not exist."""
        api_client = self._connected()
        found = await self._read(
            client.SchedulingV1Api(api_client).read_priority_class(name), missing_is_none=True
        )
        return None if found is None else dict(api_client.sanitize_for_serialization(found))

    async def list_priority_classes(self) -> list[dict[str, Any]]:
        """Every PriorityClass, as JSON (a cluster has a few)."""
        api_client = self._connected()
        found = await self._read(
            client.SchedulingV1Api(api_client).list_priority_class(), missing_is_none=False
        )
        return [dict(api_client.sanitize_for_serialization(item)) for item in found.items]

    async def pending_workloads(
        self, path: str, path_params: dict[str, str], limit: int, offset: int
    ) -> dict[str, Any] | None:
        """Kueue's visibility API on this worker (the agent serves it): the
        PendingWorkloadsSummary at `path` (a template of VISIBILITY_PATHS); None when the queue
        is unknown there. Unreachable when the worker cannot tell (not connected, the API not
        served or not allowed, no answer within the deadline)."""
        call = self._connected().call_api(
            path,
            "GET",
            path_params=path_params,
            query_params=[("limit", limit), ("offset", offset)],
            header_params={"Accept": "application/json"},
            response_types_map={200: "object"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
        )
        try:
            summary: dict[str, Any] = await self._read(call, missing_is_none=False)
        except Unreachable as error:
            if _names_a_missing_queue(error.__cause__):
                return None
            raise
        return summary

    def _connected(self) -> client.ApiClient:
        if self._api is None:
            raise Unreachable("NotConnected", f"cluster {self.name} is not connected")
        return self._api

    async def _read(self, call: Coroutine[Any, Any, Any], *, missing_is_none: bool) -> Any:
        """One read, with the connection's rate limit and deadline.

        Raises Unreachable when the connection is replaced while the read is in flight (a
        reconnect closes the client under it), or when the worker cannot tell."""
        try:
            await self._bucket.acquire()
        except BaseException:
            call.close()
            raise
        try:
            async with asyncio.timeout(self._settings.request_timeout):
                return await call
        except ApiException as error:
            if error.status == 404 and missing_is_none:
                return None
            # Forbidden, throttled, failing: this worker cannot tell; the caller asks another.
            reason = _REFUSALS.get(error.status, "ApiError")
            raise Unreachable(
                reason, f"cluster {self.name} answered {error.status}: {status_message(error)}"
            ) from error
        except (aiohttp.ClientError, AssertionError, TimeoutError, OSError) as error:
            # aiohttp asserts on a session whose connector a reconnect has just closed.
            raise Unreachable("ConnectionReset", f"cluster {self.name}: {error!r}") from error

    async def pod_logs(self, namespace: str, job_name: str, kind: str) -> list[tuple[str, str]]:
        """Logs of the pods of a job of `kind` (WorkloadRow.kind), by pod: those its kind's
        selector finds from the worker's copy (a RayService's name its cluster in the status
        alone); none while the selector cannot tell."""
        if self._api is None:
            raise Unreachable("NotConnected", f"cluster {self.name} is not connected")
        core = client.CoreV1Api(self._api)
        job_kind = self._settings.kinds.named(kind)
        copy = self.caches.get(job_kind.resource.plural, {}).get((namespace, job_name))
        selector = job_kind.pod_selector(copy or {"metadata": {"name": job_name}})
        if not selector:
            return []

        async def read() -> list[tuple[str, str]]:
            pods = await core.list_namespaced_pod(namespace, label_selector=selector)
            logs = []
            for pod in pods.items:
                text = await core.read_namespaced_pod_log(pod.metadata.name, namespace)
                logs.append((pod.metadata.name, text))
            return logs

        try:
            # One deadline for the whole read: a worker that stops answering mid-way must not
            # hold the caller (an API request) without end.
            async with asyncio.timeout(self._settings.request_timeout):
                return await read()
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            raise Unreachable("ClientConnectionFailed", f"reading logs: {error!r}") from error


# Kueue's visibility API paths (apis/visibility/v1beta2), as kubernetes-asyncio templates.
PENDING_IN_CLUSTER_QUEUE = (
    "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{name}/pendingworkloads"
)
PENDING_IN_LOCAL_QUEUE = (
    "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues/{name}"
    "/pendingworkloads"
)


def _names_a_missing_queue(error: BaseException | None) -> bool:
    """A 404 whose Status names a queue (the API answered: no such queue here), as opposed to
    one for the API itself (not served in that cluster)."""
    if not isinstance(error, ApiException) or error.status != 404 or not error.body:
        return False
    try:
        details = orjson.loads(error.body).get("details") or {}
    except (orjson.JSONDecodeError, AttributeError):
        return False
    return details.get("kind") in ("clusterqueue", "localqueue")


class _InvalidKubeconfig(Exception):
    pass
