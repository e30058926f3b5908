"""`mkq demo`: the whole system on embedded defaults, a workload mix, a live view."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import statistics
import sys
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from mkq.demo.system import DemoSystem


@click.command()
@click.option(
    "--database-url",
    default=None,
    help="The manager's database (SQLAlchemy async URL); default: SQLite in a temporary folder.",
)
@click.option(
    "--keep-running", is_flag=True, help="Keep everything up after the run, until Ctrl-C."
)
@click.option("--jobs", "job_count", default=24, show_default=True, type=click.IntRange(1, 500))
@click.option(
    "--timeout", default=50.0, show_default=True, type=float, help="Seconds the jobs may take."
)
@click.option(
    "--backend",
    type=click.Choice(["kubesim", "real"]),
    default="kubesim",
    show_default=True,
    help="kubesim clusters in this process, or real control planes (kube-apiserver, etcd, "
    "KWOK nodes; built with Go on first use, see scripts/realk8s.sh).",
)
def demo(
    database_url: str | None, keep_running: bool, job_count: int, timeout: float, backend: str
) -> None:
    """Start a manager cluster and three worker clusters (kubesim, or real control planes),
    their agents and the manager; submit a mix of Jobs through the manager cluster and the
    REST API; show it live.

    Exits 0 only if every Job finished, exactly once, in one worker cluster.
    """
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    console = Console()
    try:
        ok = asyncio.run(_main(console, database_url, keep_running, job_count, timeout, backend))
    except KeyboardInterrupt:
        ok = False
    sys.exit(0 if ok else 1)


async def _main(
    console: Console,
    database_url: str | None,
    keep_running: bool,
    job_count: int,
    time_limit: float,
    backend: str,
) -> bool:
    from mkq.demo.run import drive
    from mkq.demo.system import start_system
    from mkq.demo.workload_mix import workload_mix

    kind = "kubesim clusters" if backend == "kubesim" else "real control planes"
    with console.status(f"starting 4 {kind}, the manager and 3 agents"):
        system_context = start_system(database_url, backend=backend)
        system = await system_context.__aenter__()
    try:
        jobs = workload_mix(job_count)
        verdict = await drive(system, jobs, console, time_limit)
        console.print()
        summary = Table(title="summary")
        summary.add_column("worker cluster")
        summary.add_column("workloads", justify="right")
        for cluster, count in sorted(verdict.per_cluster.items()):
            summary.add_row(cluster, str(count))
        console.print(summary)
        if verdict.admission_seconds:
            mean = statistics.fmean(verdict.admission_seconds)
            console.print(f"average time from submission to admission: {mean:.2f}s")
        console.print(f"REST API: {system.api_url}/api/v1 (token {system.api_token})")
        for failure in verdict.failures:
            console.print(f"[red]failure:[/red] {failure}")
        if verdict.ok:
            console.print(f"[green]all {len(jobs)} workloads finished exactly once[/green]")
        if keep_running:
            _print_access(console, system)
            await _wait_for_interrupt()
        return verdict.ok
    finally:
        with console.status("stopping"):
            await system_context.__aexit__(None, None, None)


def _print_access(console: Console, system: DemoSystem) -> None:
    console.print("everything stays up until Ctrl-C. Try:")
    console.print(
        f"  open {system.api_url}/ui  # the dashboard; sign in with the token {system.api_token}"
    )
    console.print(
        f'  curl -H "Authorization: Bearer {system.api_token}" {system.api_url}/api/v1/workloads'
    )
    console.print(
        f'  curl -H "Authorization: Bearer {system.api_token}" {system.api_url}/metrics'
        "  # the manager's metrics"
    )
    for name, cluster in system.clusters.items():
        console.print(f"  # {name}")
        console.print(
            f"  kubectl --kubeconfig {cluster.kubeconfig_path} get clusterqueues,workloads -A"
        )
        console.print(
            f"  kubectl --kubeconfig {cluster.kubeconfig_path} get --raw "
            "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/CQ/pendingworkloads"
            "  # Kueue's visibility API"
        )
    agents = [*system.agents, *([system.manager_kueue] if system.manager_kueue else [])]
    for agent in agents:
        if agent.health_port is not None:
            console.print(
                f"  curl http://127.0.0.1:{agent.health_port}/metrics"
                f"  # the agent of {agent.config.cluster_name}"
            )


async def _wait_for_interrupt() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
