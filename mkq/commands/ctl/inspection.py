"""`mkq ctl describe` (kubectl's describer) and `mkq ctl pending` (Kueue's visibility API
positions, in the engine's order)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from mkq.commands.ctl import through_manager
from mkq.commands.ctl.printing import print_pending
from mkq.commands.ctl.target import (
    connection_options,
    kind_and_name,
    kind_named,
    no_manager,
    on_cluster,
    output_option,
    target_of,
)
from mkq.ctl import cluster as kube
from mkq.ctl.describe import describe as describe_text
from mkq.ctl.positions import engine_feed, positions_of
from worker_agent.kube_client import KubeClient
from worker_agent.resources import CLUSTER_QUEUES, LOCAL_QUEUES, RESOURCE_FLAVORS, WORKLOADS


@click.command()
@connection_options
@kind_and_name
@click.pass_context
def describe(ctx: click.Context, /, kind: str, name: str, **conn: Any) -> None:
    """Describe a clusterqueue, localqueue, workload or resourceflavor as kubectl does."""
    rt = kind_named(kind, (CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS, RESOURCE_FLAVORS))
    target = target_of(ctx, **conn)
    no_manager(target, "describe")

    async def run(client: KubeClient) -> None:
        obj = await kube.get(client, rt, name, target.default_namespace())
        events = await kube.events_for(client, obj)
        click.echo(describe_text(obj, events, datetime.now(UTC)), nl=False)

    on_cluster(target, run)


@click.command()
@connection_options
@output_option
@kind_and_name
@click.pass_context
def pending(ctx: click.Context, /, kind: str, name: str, output: str | None, **conn: Any) -> None:
    """The pending Workloads of a clusterqueue or localqueue in the order they will be
    admitted, with their positions (Kueue's visibility API, `pendingworkloads`)."""
    rt = kind_named(kind, (CLUSTER_QUEUES, LOCAL_QUEUES))
    target = target_of(ctx, **conn)
    if target.manager:
        through_manager.pending_in(target, rt, name, output)
        return

    async def run(client: KubeClient) -> None:
        namespace = target.default_namespace()
        cq_name = name
        if rt == LOCAL_QUEUES:
            lq = await kube.get(client, LOCAL_QUEUES, name, namespace)
            cq_name = str((lq.get("spec") or {}).get("clusterQueue", ""))
        else:
            await kube.get(client, CLUSTER_QUEUES, name, None)
        entries = positions_of(await engine_feed(client), cq_name)
        if rt == LOCAL_QUEUES:
            entries = [e for e in entries if e.namespace == namespace and e.local_queue == name]
        items = [
            {
                "metadata": {"name": e.name, "namespace": e.namespace},
                "localQueueName": e.local_queue,
                "priority": e.priority,
                "positionInClusterQueue": e.position_in_cluster_queue,
                "positionInLocalQueue": e.position_in_local_queue,
            }
            for e in entries
        ]
        rows = [
            [
                e.namespace,
                e.name,
                e.local_queue,
                e.priority,
                e.position_in_cluster_queue,
                e.position_in_local_queue,
            ]
            for e in entries
        ]
        print_pending(items, rows, output)

    on_cluster(target, run)
