"""How lists and pending positions print: kubectl's tables, names, or the objects."""

from __future__ import annotations

from typing import Any

import click

from mkq.commands.ctl.target import Target
from mkq.ctl.tables import as_list, dump, render_table, resource_name
from worker_agent.resources import ResourceType

JsonObject = dict[str, Any]


def print_list(
    items: list[JsonObject],
    rt: ResourceType,
    output: str | None,
    headers: tuple[str, ...],
    rows: list[list[Any]],
    target: Target,
) -> None:
    """As kubectl: a table (NAMESPACE first across namespaces), names, or the list."""
    if output in ("json", "yaml"):
        click.echo(dump(as_list(items, rt.api_version, rt.kind), output), nl=False)
        return
    if output == "name":
        for obj in items:
            click.echo(resource_name(obj))
        return
    if not items:
        where = (
            f" in {target.default_namespace()} namespace"
            if rt.namespaced and not target.all_namespaces
            else ""
        )
        click.echo(f"No resources found{where}.", err=True)
        return
    if rt.namespaced and target.all_namespaces:
        headers = ("Namespace", *headers)
        rows = [
            [obj["metadata"].get("namespace", ""), *row]
            for obj, row in zip(items, rows, strict=True)
        ]
    click.echo(render_table(headers, rows), nl=False)


PENDING_COLUMNS = (
    "Namespace",
    "Name",
    "LocalQueue",
    "Priority",
    "Position in ClusterQueue",
    "Position in LocalQueue",
)


def print_pending(items: list[JsonObject], rows: list[list[Any]], output: str | None) -> None:
    if output in ("json", "yaml"):
        document = {
            "apiVersion": "visibility.kueue.x-k8s.io/v1beta2",
            "kind": "PendingWorkloadsSummary",
            "items": items,
        }
        click.echo(dump(document, output), nl=False)
        return
    if not rows:
        click.echo("No pending workloads.", err=True)
        return
    click.echo(render_table(PENDING_COLUMNS, rows), nl=False)
