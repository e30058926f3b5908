"""`mkq ctl create`, `stop` and `resume`: what kueuectl writes (`cmd/kueuectl/app/create/`,
`stop/`, `resume/`), and its answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import click

from mkq.commands.ctl.target import (
    KINDS,
    Target,
    connection_options,
    kind_and_name,
    kind_named,
    no_manager,
    on_cluster,
    output_option,
    target_of,
)
from mkq.ctl import cluster as kube
from mkq.ctl import objects
from mkq.ctl.tables import done
from worker_agent.kube_client import KubeClient
from worker_agent.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    ResourceType,
)

JsonObject = dict[str, Any]


@click.group()
def create() -> None:
    """Create a localqueue, clusterqueue or resourceflavor (kueuectl create)."""


def create_object(
    target: Target,
    rt: ResourceType,
    build: Callable[[], JsonObject],
    output: str | None,
    check: Callable[[KubeClient], Awaitable[None]] | None = None,
) -> None:
    """Build the object from the flags (a bad value fails before any call), check what it
    refers to, create it, and answer as kueuectl (`<kind>.<group>/<name> created`)."""
    no_manager(target, f"create {rt.kind.lower()}")

    async def run(client: KubeClient) -> None:
        body = build()
        if check is not None:
            await check(client)
        made = await kube.create(client, rt, body)
        click.echo(done(made, "created", output), nl=False)

    on_cluster(target, run)


@create.command(name="localqueue")
@connection_options
@output_option
@click.argument("name")
@click.option(
    "-c",
    "--clusterqueue",
    required=True,
    help="The ClusterQueue the LocalQueue points to (required).",
)
@click.option("-i", "--ignore-unknown-cq", is_flag=True, help="Ignore an unknown ClusterQueue.")
@click.pass_context
def create_localqueue(
    ctx: click.Context,
    /,
    name: str,
    clusterqueue: str,
    ignore_unknown_cq: bool,
    output: str | None,
    **conn: Any,
) -> None:
    """Create a LocalQueue; its ClusterQueue must exist unless --ignore-unknown-cq."""
    target = target_of(ctx, **conn)

    async def check(client: KubeClient) -> None:
        if not ignore_unknown_cq:
            await kube.get(client, CLUSTER_QUEUES, clusterqueue, None)

    def build() -> JsonObject:
        return objects.local_queue(name, target.default_namespace(), clusterqueue)

    create_object(target, LOCAL_QUEUES, build, output, check)


@create.command(name="clusterqueue")
@connection_options
@output_option
@click.argument("name")
@click.option("--cohort", default="", help="The cohort this ClusterQueue belongs to.")
@click.option(
    "--queuing-strategy",
    type=click.Choice(["BestEffortFIFO", "StrictFIFO"]),
    default="BestEffortFIFO",
    help="The queueing strategy of its workloads.",
)
@click.option(
    "--namespace-selector",
    multiple=True,
    help="KEY=VALUE[,KEY=VALUE]: namespaces allowed to submit (all by default).",
)
@click.option(
    "--reclaim-within-cohort",
    type=click.Choice(["Never", "LowerPriority", "Any"]),
    default="Never",
    help="Preempt in the cohort to reclaim nominal quota.",
)
@click.option(
    "--preemption-within-cluster-queue",
    type=click.Choice(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
    default="Never",
    help="Preempt within the ClusterQueue.",
)
@click.option(
    "--nominal-quota",
    multiple=True,
    help='"FLAVOR:RESOURCE=QUANTITY;...", flavors separated by commas.',
)
@click.option("--borrowing-limit", multiple=True, help="As --nominal-quota.")
@click.option("--lending-limit", multiple=True, help="As --nominal-quota.")
@click.pass_context
def create_clusterqueue(
    ctx: click.Context,
    /,
    name: str,
    cohort: str,
    queuing_strategy: str,
    namespace_selector: tuple[str, ...],
    reclaim_within_cohort: str,
    preemption_within_cluster_queue: str,
    nominal_quota: tuple[str, ...],
    borrowing_limit: tuple[str, ...],
    lending_limit: tuple[str, ...],
    output: str | None,
    **conn: Any,
) -> None:
    """Create a ClusterQueue from kueuectl's flags."""
    target = target_of(ctx, **conn)

    def build() -> JsonObject:
        return objects.cluster_queue(
            name,
            cohort=cohort,
            queuing_strategy=queuing_strategy,
            namespace_selector=objects.key_values(namespace_selector, "namespace-selector"),
            reclaim_within_cohort=reclaim_within_cohort,
            preemption_within_cluster_queue=preemption_within_cluster_queue,
            quotas={
                "nominal-quota": objects.comma_separated(nominal_quota),
                "borrowing-limit": objects.comma_separated(borrowing_limit),
                "lending-limit": objects.comma_separated(lending_limit),
            },
        )

    create_object(target, CLUSTER_QUEUES, build, output)


@create.command(name="resourceflavor")
@connection_options
@output_option
@click.argument("name")
@click.option("--node-labels", multiple=True, help="KEY=VALUE[,KEY=VALUE] of its nodes.")
@click.option("--node-taints", multiple=True, help="KEY[=VALUE]:EFFECT[,...] of its nodes.")
@click.option(
    "--tolerations", multiple=True, help="KEY[=VALUE][:EFFECT][,...] added to the pods it admits."
)
@click.pass_context
def create_resourceflavor(
    ctx: click.Context,
    /,
    name: str,
    node_labels: tuple[str, ...],
    node_taints: tuple[str, ...],
    tolerations: tuple[str, ...],
    output: str | None,
    **conn: Any,
) -> None:
    """Create a ResourceFlavor."""
    target = target_of(ctx, **conn)

    def build() -> JsonObject:
        return objects.resource_flavor(
            name,
            objects.key_values(node_labels, "node-labels"),
            objects.comma_separated(node_taints),
            objects.comma_separated(tolerations),
        )

    create_object(target, RESOURCE_FLAVORS, build, output)


def patch_verb(
    ctx: click.Context,
    /,
    kind: str,
    name: str,
    patch: JsonObject,
    operation: str,
    output: str | None,
    conn: dict[str, Any],
) -> None:
    rt = kind_named(kind, (WORKLOADS, CLUSTER_QUEUES, LOCAL_QUEUES))
    target = target_of(ctx, **conn)
    no_manager(target, operation)

    async def run(client: KubeClient) -> None:
        changed = await kube.merge_patch(client, rt, name, target.default_namespace(), patch)
        # kueuectl names the operation for Workloads only (NewPrintFlags("stopped"));
        # its queue verbs print the bare name.
        click.echo(done(changed, operation if rt == WORKLOADS else "", output), nl=False)

    on_cluster(target, run)


@click.command()
@connection_options
@output_option
@kind_and_name
@click.option(
    "--keep-already-running",
    is_flag=True,
    help="Queues: keep the workloads already running (Hold, not HoldAndDrain).",
)
@click.pass_context
def stop(
    ctx: click.Context,
    /,
    kind: str,
    name: str,
    keep_already_running: bool,
    output: str | None,
    **conn: Any,
) -> None:
    """Stop a workload (spec.active=false), or a clusterqueue or localqueue (stopPolicy
    HoldAndDrain, or Hold with --keep-already-running)."""
    if KINDS.get(kind.lower()) == WORKLOADS:
        patch: JsonObject = {"spec": {"active": False}}
    else:
        policy = "Hold" if keep_already_running else "HoldAndDrain"
        patch = {"spec": {"stopPolicy": policy}}
    patch_verb(ctx, kind, name, patch, "stopped", output, conn)


@click.command()
@connection_options
@output_option
@kind_and_name
@click.pass_context
def resume(ctx: click.Context, /, kind: str, name: str, output: str | None, **conn: Any) -> None:
    """Resume a workload (spec.active=true), or a clusterqueue or localqueue (stopPolicy
    None)."""
    if KINDS.get(kind.lower()) == WORKLOADS:
        patch: JsonObject = {"spec": {"active": True}}
    else:
        patch = {"spec": {"stopPolicy": "None"}}
    patch_verb(ctx, kind, name, patch, "resumed", output, conn)
