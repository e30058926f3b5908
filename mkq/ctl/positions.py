"""Pending Workloads in the order the engine's next cycles take them, as Kueue's visibility
API (`pkg/visibility`) places them: the cluster's queue objects and Workloads are fed to an
engine state the way the agent feeds its own (worker_agent.engine_feed), and the ClusterQueue
heaps give the order. One order, the engine's, for `mkq ctl pending` and the workload list's
POSITION IN QUEUE."""

from __future__ import annotations

from worker_agent.cache import object_key
from worker_agent.engine import PendingPosition, pending_positions
from worker_agent.engine_feed import EngineFeed
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import ResourceType
from worker_agent.visibility import ORDER_INPUTS, feed_of


async def engine_feed(client: KubeClient) -> EngineFeed:
    """An engine state holding the cluster's queues and Workloads as they are now; a kind
    the server does not serve or the user may not read is left out."""
    objects: dict[ResourceType, dict[str, dict[str, object]]] = {}
    for rt in ORDER_INPUTS:
        try:
            items, _ = await client.list(rt)
        except ApiError as error:
            if error.status in (403, 404):
                continue
            raise
        objects[rt] = {object_key(obj): obj for obj in items}
    return feed_of(objects)


def positions_of(feed: EngineFeed, cluster_queue: str) -> list[PendingPosition]:
    return pending_positions(feed.state, cluster_queue)


def local_queue_positions(feed: EngineFeed) -> dict[str, int]:
    """ "namespace/name" -> position in its LocalQueue, for every pending Workload."""
    result: dict[str, int] = {}
    for name in feed.state.cluster_queues:
        for entry in pending_positions(feed.state, name):
            result[f"{entry.namespace}/{entry.name}"] = entry.position_in_local_queue
    return result
