"""`mkq ctl list`: kueuectl's list verbs (`cmd/kueuectl/app/list/`), and the manager's
clusters."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import click

from mkq.commands.ctl import through_manager
from mkq.commands.ctl.printing import print_list
from mkq.commands.ctl.target import (
    Target,
    connection_options,
    fail,
    no_manager,
    on_cluster,
    output_option,
    target_of,
)
from mkq.ctl import cluster as kube
from mkq.ctl import columns
from mkq.ctl.errors import CtlError
from mkq.ctl.positions import engine_feed, local_queue_positions
from mkq.ctl.tables import render_table
from worker_agent.kube_client import KubeClient
from worker_agent.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    ResourceType,
)

JsonObject = dict[str, Any]


@click.group(name="list")
def list_group() -> None:
    """List Kueue's objects (kueuectl list)."""


# kueuectl's columns of the kinds whose rows need nothing but the object.
_ROWS: dict[ResourceType, tuple[tuple[str, ...], Callable[[JsonObject, datetime], list[Any]]]] = {
    CLUSTER_QUEUES: (columns.CLUSTER_QUEUE_COLUMNS, columns.cluster_queue_row),
    LOCAL_QUEUES: (columns.LOCAL_QUEUE_COLUMNS, columns.local_queue_row),
    RESOURCE_FLAVORS: (columns.RESOURCE_FLAVOR_COLUMNS, columns.resource_flavor_row),
}


def lister(
    target: Target,
    rt: ResourceType,
    selector: str | None,
    output: str | None,
    keep: Callable[[JsonObject], bool] = lambda _: True,
) -> Callable[[KubeClient], Awaitable[None]]:
    """The verb that lists `rt` (in the target's namespace, if namespaced), keeps what `keep`
    accepts, and prints kueuectl's columns."""
    headers, row = _ROWS[rt]

    async def run(client: KubeClient) -> None:
        found = await kube.list_objects(client, rt, target.list_namespace(), selector)
        items = [obj for obj in found if keep(obj)]
        now = datetime.now(UTC)
        print_list(items, rt, output, headers, [row(obj, now) for obj in items], target)

    return run


@list_group.command(name="clusterqueue")
@connection_options
@output_option
@click.option("-l", "--selector", help="Label selector (key1=value1,...).")
@click.option("--active", type=click.Choice(["true", "false"]), help="Filter by active status.")
@click.pass_context
def list_clusterqueue(
    ctx: click.Context, /, output: str | None, selector: str | None, active: str | None, **conn: Any
) -> None:
    """List ClusterQueues: NAME, COHORT, PENDING WORKLOADS, ADMITTED WORKLOADS, ACTIVE, AGE."""

    def keep(cq: JsonObject) -> bool:
        return active is None or columns.cluster_queue_active(cq) == (active == "true")

    target = target_of(ctx, **conn)
    no_manager(target, "list clusterqueue")
    on_cluster(target, lister(target, CLUSTER_QUEUES, selector, output, keep))


@list_group.command(name="localqueue")
@connection_options
@output_option
@click.option("-A", "--all-namespaces", is_flag=True, help="List across all namespaces.")
@click.option("-l", "--selector", help="Label selector (key1=value1,...).")
@click.option("-c", "--clusterqueue", help="Only those of this ClusterQueue.")
@click.pass_context
def list_localqueue(
    ctx: click.Context,
    /,
    output: str | None,
    selector: str | None,
    clusterqueue: str | None,
    **conn: Any,
) -> None:
    """List LocalQueues: NAME, CLUSTERQUEUE, PENDING WORKLOADS, ADMITTED WORKLOADS, AGE."""
    target = target_of(ctx, **conn)
    if target.manager:
        through_manager.local_queues(target, output)
        return

    def keep(lq: JsonObject) -> bool:
        return not clusterqueue or (lq.get("spec") or {}).get("clusterQueue") == clusterqueue

    on_cluster(target, lister(target, LOCAL_QUEUES, selector, output, keep))


@list_group.command(name="resourceflavor")
@connection_options
@output_option
@click.option("-l", "--selector", help="Label selector (key1=value1,...).")
@click.pass_context
def list_resourceflavor(
    ctx: click.Context, /, output: str | None, selector: str | None, **conn: Any
) -> None:
    """List ResourceFlavors: NAME, NODE LABELS, AGE."""
    target = target_of(ctx, **conn)
    no_manager(target, "list resourceflavor")
    on_cluster(target, lister(target, RESOURCE_FLAVORS, selector, output))


def statuses(given: tuple[str, ...]) -> set[str]:
    """--status values (list_workload.go getWorkloadStatuses); "all" or none: every one."""
    chosen: set[str] = set()
    for value in given:
        match = [s for s in columns.WORKLOAD_STATUSES if s.lower() == value.lower()]
        if value.lower() == "all":
            return set()
        if not match:
            raise CtlError(
                f'--status: invalid status value ({value}). Must be "all", "pending", '
                '"admitted" or "finished"'
            )
        chosen.add(match[0])
    return chosen


@list_group.command(name="workload")
@connection_options
@output_option
@click.option("-A", "--all-namespaces", is_flag=True, help="List across all namespaces.")
@click.option("-l", "--selector", help="Label selector (key1=value1,...).")
@click.option("-c", "--clusterqueue", help="Only those admitted in this ClusterQueue.")
@click.option("-q", "--localqueue", help="Only those of this LocalQueue.")
@click.option(
    "--status",
    "status",
    multiple=True,
    help='"all", "pending", "quotaReserved", "admitted" or "finished" (repeatable).',
)
@click.option("--for", "for_object", help="Only the Workload of this job: TYPE[.API-GROUP]/NAME.")
@click.pass_context
def list_workload(
    ctx: click.Context,
    /,
    output: str | None,
    selector: str | None,
    clusterqueue: str | None,
    localqueue: str | None,
    status: tuple[str, ...],
    for_object: str | None,
    **conn: Any,
) -> None:
    """List Workloads with kueuectl's columns; POSITION IN QUEUE is the engine's order."""
    target = target_of(ctx, **conn)
    try:
        wanted = statuses(status)
    except CtlError as error:
        fail(str(error))
    if target.manager:
        through_manager.workloads(target, output, localqueue, clusterqueue, wanted)
        return

    async def run(client: KubeClient) -> None:
        namespace = target.list_namespace()
        items = await kube.list_objects(client, WORKLOADS, namespace, selector)
        if for_object:
            uid = await owner_uid(client, for_object, target.default_namespace())
            items = [
                wl
                for wl in items
                if any(ref.get("uid") == uid for ref in wl["metadata"].get("ownerReferences") or [])
            ]
        items = [
            wl
            for wl in items
            if (not localqueue or (wl.get("spec") or {}).get("queueName") == localqueue)
            and (
                not clusterqueue
                or ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
                == clusterqueue
            )
            and (not wanted or columns.workload_status(wl) in wanted)
        ]
        local_queues = {
            f"{lq['metadata']['namespace']}/{lq['metadata']['name']}": lq
            for lq in await kube.list_objects(client, LOCAL_QUEUES, namespace)
        }
        positions = local_queue_positions(await engine_feed(client))
        now = datetime.now(UTC)
        rows = [columns.workload_row(wl, now, local_queues, positions) for wl in items]
        print_list(items, WORKLOADS, output, columns.WORKLOAD_COLUMNS, rows, target)

    on_cluster(target, run)


async def owner_uid(client: KubeClient, for_object: str, namespace: str) -> str:
    """The UID of `--for`'s job (TYPE[.API-GROUP]/NAME)."""
    type_name, _, name = for_object.partition("/")
    rt = kube.job_kind(type_name) if name else None
    if rt is None:
        raise CtlError(
            f"--for {for_object!r}: want a job as TYPE[.API-GROUP]/NAME, e.g. job/sample"
        )
    job = await kube.get(client, rt, name, namespace)
    return str(job["metadata"].get("uid", ""))


@list_group.command(name="pods")
@connection_options
@output_option
@click.option("-A", "--all-namespaces", is_flag=True, help="List across all namespaces.")
@click.option("-l", "--selector", help="Label selector (key1=value1,...).")
@click.option(
    "--for",
    "for_object",
    required=True,
    help="The job (TYPE[.API-GROUP]/NAME) or workload/NAME whose pods to list.",
)
@click.pass_context
def list_pods(
    ctx: click.Context, /, output: str | None, selector: str | None, for_object: str, **conn: Any
) -> None:
    """List the pods of a job or Workload (kubectl's pod columns)."""
    target = target_of(ctx, **conn)
    no_manager(target, "list pods")

    async def run(client: KubeClient) -> None:
        pod_selector = await kube.pod_selector_for(client, for_object, target.default_namespace())
        full = ",".join(s for s in (selector, pod_selector) if s)
        if output in ("json", "yaml", "name"):
            from worker_agent.resources import PODS

            items = await kube.list_objects(client, PODS, target.list_namespace(), full)
            print_list(items, PODS, output, (), [], target)
            return
        table = await kube.pods_table(client, target.list_namespace(), full)
        shown = [
            (i, c)
            for i, c in enumerate(table.get("columnDefinitions") or [])
            if output == "wide" or not c.get("priority")
        ]
        headers = tuple(str(c["name"]) for _, c in shown)
        rows = [[row["cells"][i] for i, _ in shown] for row in table.get("rows") or []]
        if not rows:
            click.echo(f"No resources found in {target.default_namespace()} namespace.", err=True)
            return
        if target.all_namespaces:
            headers = ("Namespace", *headers)
            rows = [
                [(r.get("object") or {}).get("metadata", {}).get("namespace", ""), *cells]
                for r, cells in zip(table["rows"], rows, strict=True)
            ]
        click.echo(render_table(headers, rows), nl=False)

    on_cluster(target, run)


@list_group.command(name="clusters")
@output_option
@click.pass_context
def list_clusters(ctx: click.Context, /, output: str | None) -> None:
    """The manager's worker clusters: NAME, STATE, LAST CONTACT, AGE (needs --manager)."""
    target = target_of(ctx)
    if not target.manager:
        fail("list clusters needs --manager URL (and --token)")

    through_manager.clusters(target, output)
