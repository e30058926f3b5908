"""Kueue's visibility API, `visibility.kueue.x-k8s.io/v1beta2`: the pending Workloads of a
ClusterQueue or a LocalQueue, each with its position, as Kueue's `pkg/visibility/storage`
serves them (`clusterqueues/{name}/pendingworkloads`,
`namespaces/{ns}/localqueues/{name}/pendingworkloads`, with `limit` and `offset`).

The order is the engine's: the cluster's queues and Workloads are fed to an engine state as the
agent feeds its own (worker_agent.engine_feed), and the ClusterQueue heaps give it. Every
replica answers, leader or not (kube-apiserver calls any pod behind the Service), from its
informer caches; the state is rebuilt only when a cache has changed since the last answer.

The agent serves it on its webhook server (kueue_api.webhooks.server), registered with
kube-apiserver as an aggregated API (an APIService, deploy/base/agent/visibility.yaml);
kube-apiserver authenticates and authorizes the caller (RBAC on `pendingworkloads` in this
group) before it proxies, and the server checks that the request comes from kube-apiserver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_api import Configuration
from kueue_api.api_errors import ApiError, bad_request, not_found
from kueue_api.webhooks.configurations import VISIBILITY_GROUP, VISIBILITY_VERSION
from worker_agent.cache import Change
from worker_agent.engine import PendingPosition, pending_positions
from worker_agent.engine_feed import ENGINE_RESOURCES, EngineFeed
from worker_agent.informers import InformerSet
from worker_agent.resources import LOCAL_QUEUES, NODES, PODS, WORKLOADS, ResourceType

JsonObject = dict[str, Any]

GROUP, VERSION = VISIBILITY_GROUP, VISIBILITY_VERSION
API_VERSION = f"{GROUP}/{VERSION}"
PREFIX = f"/apis/{GROUP}/{VERSION}"
# pkg/constants: DefaultPendingWorkloadsLimit (also the default for limit=0, as
# apis/visibility/v1beta2/defaults.go sets it) and MaxPendingWorkloadsLimit.
DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000
SUMMARY = "PendingWorkloadsSummary"

# Nodes and pods place workloads (TAS, DRA) but never order them.
ORDER_INPUTS: tuple[ResourceType, ...] = tuple(
    rt for rt in ENGINE_RESOURCES if rt not in (NODES, PODS) and rt.group in ("", "kueue.x-k8s.io")
)

Objects = Mapping[ResourceType, Mapping[str, JsonObject]]
"""The cluster's objects by resource, then by key (`namespace/name` or `name`)."""


def feed_of(objects: Objects, configuration: Configuration | None = None) -> EngineFeed:
    """An engine state holding `objects` (configuration first, as a rebuild feeds them)."""
    feed = EngineFeed(configuration=configuration)
    for rt in ORDER_INPUTS:
        for key, obj in (objects.get(rt) or {}).items():
            feed.apply(rt, Change(key, None, obj))
    return feed


def discovery() -> JsonObject:
    """The APIResourceList kube-apiserver's availability check and discovery read (the parent
    resources exist only to hold the subresource, as Kueue registers them)."""

    def resource(name: str, singular: str, namespaced: bool, kind: str, verbs: list[str]) -> Any:
        return {
            "name": name,
            "singularName": singular,
            "namespaced": namespaced,
            "kind": kind,
            "verbs": verbs,
        }

    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": API_VERSION,
        "resources": [
            resource("clusterqueues", "clusterqueue", False, "ClusterQueue", []),
            resource(
                "clusterqueues/pendingworkloads", "", False, "PendingWorkloadsSummary", ["get"]
            ),
            resource("localqueues", "localqueue", True, "LocalQueue", []),
            resource("localqueues/pendingworkloads", "", True, SUMMARY, ["get"]),
        ],
    }


@dataclass(frozen=True)
class Query:
    """One request: the discovery document, or the pending Workloads of a ClusterQueue
    (namespace None) or of a LocalQueue."""

    name: str | None = None
    namespace: str | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0


def _integer(query: Mapping[str, str], field: str, default: int) -> int:
    raw = query.get(field)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise bad_request(
            f'invalid value for query parameter "{field}": "{raw}" is not an integer'
        ) from None


def parse(path: str, query: Mapping[str, str]) -> Query:
    """The request at `path` (below PREFIX); ApiError (404, 400) for anything else."""
    parts = [part for part in path.split("/") if part]
    if not parts:
        return Query()
    if len(parts) == 3 and parts[0] == "clusterqueues" and parts[2] == "pendingworkloads":
        name, namespace = parts[1], None
    elif (
        len(parts) == 5
        and parts[0] == "namespaces"
        and parts[2] == "localqueues"
        and parts[4] == "pendingworkloads"
    ):
        name, namespace = parts[3], parts[1]
    else:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    limit = _integer(query, "limit", DEFAULT_LIMIT) or DEFAULT_LIMIT
    offset = _integer(query, "offset", 0)
    # Kueue's boundedLimitOffset (pkg/visibility/storage/utils.go).
    return Query(name, namespace, min(max(limit, 0), MAX_LIMIT), max(offset, 0))


def _pending_workload(entry: PendingPosition, workload: JsonObject | None) -> JsonObject:
    """Kueue's PendingWorkload (newPendingWorkload): the Workload's identity, its owners'
    references reduced to apiVersion, kind, name and uid, its priority and places."""
    meta = (workload or {}).get("metadata") or {}
    owners = [
        {key: ref[key] for key in ("apiVersion", "kind", "name", "uid") if key in ref}
        for ref in meta.get("ownerReferences") or []
    ]
    metadata: JsonObject = {
        "name": entry.name,
        "namespace": entry.namespace,
        "creationTimestamp": meta.get("creationTimestamp"),
    }
    if owners:
        metadata["ownerReferences"] = owners
    return {
        "metadata": metadata,
        "priority": entry.priority,
        "localQueueName": entry.local_queue,
        "positionInClusterQueue": entry.position_in_cluster_queue,
        "positionInLocalQueue": entry.position_in_local_queue,
    }


def _summary(items: list[JsonObject]) -> JsonObject:
    return {
        "kind": SUMMARY,
        "apiVersion": API_VERSION,
        "metadata": {"creationTimestamp": None},
        "items": items,
    }


def _cluster_queue_entries(
    feed: EngineFeed, name: str, limit: int, offset: int
) -> Sequence[PendingPosition]:
    if name not in feed.state.cluster_queues:
        raise not_found("clusterqueue", GROUP, name)
    return pending_positions(feed.state, name)[offset : offset + limit]


def _local_queue_entries(
    feed: EngineFeed, objects: Objects, namespace: str, name: str, limit: int, offset: int
) -> Sequence[PendingPosition]:
    local_queue = (objects.get(LOCAL_QUEUES) or {}).get(f"{namespace}/{name}")
    if local_queue is None:
        raise not_found("localqueue", GROUP, name)
    cluster_queue = (local_queue.get("spec") or {}).get("clusterQueue") or ""
    # A LocalQueue whose ClusterQueue is missing has no pending Workloads to show.
    mine = [
        entry
        for entry in pending_positions(feed.state, cluster_queue)
        if entry.namespace == namespace and entry.local_queue == name
    ]
    return mine[offset : offset + limit]


def answer(query: Query, feed: EngineFeed, objects: Objects) -> JsonObject:
    """The body for `query`, from the state `feed` holds (built from `objects`)."""
    if query.name is None:
        return discovery()
    if query.namespace is None:
        entries = _cluster_queue_entries(feed, query.name, query.limit, query.offset)
    else:
        entries = _local_queue_entries(
            feed, objects, query.namespace, query.name, query.limit, query.offset
        )
    workloads = objects.get(WORKLOADS) or {}
    return _summary(
        [_pending_workload(e, workloads.get(f"{e.namespace}/{e.name}")) for e in entries]
    )


class VisibilityApi:
    """Answers the API from the agent's informer caches."""

    def __init__(self, informers: InformerSet, configuration: Configuration | None) -> None:
        self._informers = informers
        self._configuration = configuration
        self._lock = asyncio.Lock()
        self._built: tuple[tuple[int, ...], EngineFeed, Objects] | None = None

    def _revisions(self) -> tuple[int, ...]:
        return tuple(
            self._informers.cache(rt).revision for rt in ORDER_INPUTS if rt in self._informers
        )

    async def __call__(self, path: str, query: Mapping[str, str]) -> tuple[int, JsonObject]:
        """(HTTP status, body) for a GET of PREFIX + `path`: a Status on failure."""
        try:
            parsed = parse(path, query)
            if parsed.name is None:
                return 200, discovery()
            # One at a time: a request builds or reuses the state the next one may reuse.
            async with self._lock:
                revisions = self._revisions()
                if self._built is None or self._built[0] != revisions:
                    cached: Objects = {
                        rt: self._informers.cache(rt).snapshot()
                        for rt in ORDER_INPUTS
                        if rt in self._informers
                    }
                    # Feeding thousands of Workloads takes a while: off the event loop.
                    built = await asyncio.to_thread(feed_of, cached, self._configuration)
                    self._built = (revisions, built, cached)
                _, feed, objects = self._built
                return 200, await asyncio.to_thread(answer, parsed, feed, objects)
        except ApiError as error:
            return error.code, error.status()
