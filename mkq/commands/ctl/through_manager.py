"""The verbs that read every cluster through the manager's REST API (/api/v1/workloads,
/queues, /clusters): the same columns, and the cluster each Workload runs in."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import click

from kueue_api.jobs import BUILT_IN, dispatching
from mkq.commands.ctl.printing import print_pending
from mkq.commands.ctl.target import Target, fail
from mkq.ctl import columns
from mkq.ctl.errors import CtlError
from mkq.ctl.manager_api import ManagerApi
from mkq.ctl.tables import dump, parse_time, render_table, since
from worker_agent.resources import LOCAL_QUEUES, ResourceType

JsonObject = dict[str, Any]
T = TypeVar("T")


def manager_api(target: Target) -> ManagerApi:
    assert target.manager is not None
    return ManagerApi(target.manager, target.token)


def manager_call(target: Target, use: Callable[[ManagerApi], T]) -> T:
    api = manager_api(target)
    try:
        return use(api)
    except CtlError as error:
        fail(str(error))
    finally:
        api.close()


def queue_positions(api: ManagerApi) -> dict[str, int]:
    result: dict[str, int] = {}
    for queue in api.list_all("/queues"):
        for entry in queue.get("workloads") or []:
            result[f"{entry['namespace']}/{entry['name']}"] = int(entry["position"])
    return result


def manager_status(record: JsonObject) -> str:
    """Kueue's status when the manager holds the Workload's status, else its own state."""
    status = record.get("status")
    if isinstance(status, dict) and status.get("conditions"):
        return columns.workload_status({"status": status})
    return str(record.get("state", ""))


MANAGER_WORKLOAD_COLUMNS = (*columns.WORKLOAD_COLUMNS[:-1], "Cluster", "Age")


# Every kind a manager's record may hold: the job kinds and the pod groups it dispatches.
_KINDS = dispatching(BUILT_IN)


def _job_type(kind: str) -> str:
    """The record's kind as kueuectl's JOB TYPE (`job.batch`), through the job-kind layer."""
    try:
        rt = _KINDS.named(kind).resource
    except KeyError:
        return kind.lower()
    return columns.job_type(rt.api_version, rt.kind)


def _exec_time(record: JsonObject, now: datetime) -> str:
    """From admission to finish (or now), as kueuectl's EXEC TIME."""
    start = record.get("admittedAt")
    if not start:
        return ""
    return since(start, parse_time(record.get("finishedAt")) or now)


def _row(
    record: JsonObject, cluster_queue: str, status: str, position: int | None, now: datetime
) -> list[Any]:
    return [
        record.get("workloadName") or record["name"],
        _job_type(str(record.get("kind", ""))),
        record["name"],
        record.get("queue", ""),
        cluster_queue,
        status.upper(),
        "" if position is None else str(position),
        _exec_time(record, now),
        record.get("cluster") or "",
        since(record.get("createdAt"), now),
    ]


def _print_workloads(
    target: Target, shown: list[JsonObject], rows: list[list[Any]], output: str | None
) -> None:
    if output in ("json", "yaml"):
        click.echo(dump({"items": shown}, output), nl=False)
        return
    if output == "name":
        for record in shown:
            click.echo(f"workload.kueue.x-k8s.io/{record.get('workloadName') or record['name']}")
        return
    if not rows:
        click.echo("No resources found.", err=True)
        return
    headers: tuple[str, ...] = MANAGER_WORKLOAD_COLUMNS
    if target.all_namespaces:
        headers = ("Namespace", *headers)
        rows = [[r["namespace"], *row] for r, row in zip(shown, rows, strict=True)]
    click.echo(render_table(headers, rows), nl=False)


def workloads(
    target: Target,
    output: str | None,
    localqueue: str | None,
    clusterqueue: str | None,
    wanted: set[str],
) -> None:
    """`list workload` across clusters: kueuectl's columns and the CLUSTER each runs in."""

    def read(api: ManagerApi) -> None:
        records = api.list_all("/workloads", {"queue": localqueue} if localqueue else None)
        positions = queue_positions(api)
        now = datetime.now(UTC)
        namespace = target.list_namespace()
        shown, rows = [], []
        for record in records:
            status = record.get("status") or {}
            cq = str((status.get("admission") or {}).get("clusterQueue", ""))
            state = manager_status(record)
            if (
                (namespace and record["namespace"] != namespace)
                or (clusterqueue and cq != clusterqueue)
                or (wanted and state not in wanted)
            ):
                continue
            position = positions.get(f"{record['namespace']}/{record['name']}")
            shown.append(record)
            rows.append(_row(record, cq, state, position, now))
        _print_workloads(target, shown, rows, output)

    manager_call(target, read)


def local_queues(target: Target, output: str | None) -> None:
    def read(api: ManagerApi) -> None:
        queues = api.list_all("/queues")
        namespace = target.list_namespace()
        queues = [q for q in queues if not namespace or q["namespace"] == namespace]
        if output in ("json", "yaml"):
            click.echo(dump({"items": queues}, output), nl=False)
            return
        rows = [[q["namespace"], q["name"], q.get("pending", 0)] for q in queues]
        if not rows:
            click.echo("No resources found.", err=True)
            return
        click.echo(render_table(("Namespace", "Name", "Pending Workloads"), rows), nl=False)

    manager_call(target, read)


def pending_in(target: Target, rt: ResourceType, name: str, output: str | None) -> None:
    if rt != LOCAL_QUEUES:
        fail("pending clusterqueue reads one cluster; through the manager: pending localqueue")

    def read(api: ManagerApi) -> None:
        namespace = target.default_namespace()
        queue = next(
            (
                q
                for q in api.list_all("/queues")
                if q["namespace"] == namespace and q["name"] == name
            ),
            None,
        )
        entries = (queue or {}).get("workloads") or []
        items = [
            {
                "metadata": {"name": e["name"], "namespace": e["namespace"]},
                "localQueueName": name,
                "priority": e["priority"],
                "positionInLocalQueue": e["position"],
            }
            for e in entries
        ]
        rows = [
            [e["namespace"], e["name"], name, e["priority"], "", e["position"]] for e in entries
        ]
        print_pending(items, rows, output)

    manager_call(target, read)


def clusters(target: Target, output: str | None) -> None:
    """The manager's worker clusters: NAME, STATE, LAST CONTACT, AGE."""

    def read(api: ManagerApi) -> None:
        found = api.list_all("/clusters")
        if output in ("json", "yaml"):
            click.echo(dump({"items": found}, output), nl=False)
            return
        now = datetime.now(UTC)
        rows = [
            [
                c["name"],
                c.get("state", ""),
                since(c.get("lastContact"), now) if c.get("lastContact") else "",
                since(c.get("createdAt"), now),
            ]
            for c in found
        ]
        click.echo(render_table(("Name", "State", "Last Contact", "Age"), rows), nl=False)

    manager_call(target, read)
