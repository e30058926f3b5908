"""`mkq kubesim serve`: one emulated Kubernetes cluster on a loopback port, until interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path

import click
import yaml
from rich.console import Console
from rich.live import Live
from rich.text import Text

from kubesim import ClusterSpec, ClusterStartError, RunningCluster, start_cluster


@click.group()
def kubesim() -> None:
    """Run an emulated Kubernetes cluster."""


@kubesim.command("serve")
@click.option(
    "--port", type=int, default=0, show_default=True, help="Plain-HTTP port (0: any free)."
)
@click.option(
    "--nodes",
    "nodes",
    type=click.Path(dir_okay=False),
    default=None,
    help="Node profile YAML (`nodes:` groups or a `topology:` as in Kueue's TAS generator).",
)
@click.option(
    "--kubeconfig-out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the cluster's kubeconfig here (default: a file in a temporary directory).",
)
@click.option("--name", default="kubesim", show_default=True, help="Cluster and context name.")
@click.option(
    "--crds",
    multiple=True,
    type=click.Path(exists=False),
    help="CRD YAML file or directory to install at start (repeatable).",
)
@click.option(
    "--run-time-scale",
    type=float,
    default=1.0,
    show_default=True,
    help="Multiply every pod run time (0.1 makes a demo ten times faster).",
)
@click.option("--token", default=None, help="Bearer token to accept (default: a random one).")
@click.option(
    "--kubeconfig-scheme",
    type=click.Choice(["https", "http"]),
    default="https",
    show_default=True,
    help="Listener the kubeconfig names; kubectl sends tokens only over https.",
)
def serve(
    port: int,
    nodes: str | None,
    kubeconfig_out: str | None,
    name: str,
    crds: tuple[str, ...],
    run_time_scale: float,
    token: str | None,
    kubeconfig_scheme: str,
) -> None:
    """Serve the Kubernetes API with simulated nodes, scheduler, kubelet and job controller."""
    console = Console(stderr=True)
    if run_time_scale < 0:
        console.print("[red]error:[/red] --run-time-scale: must not be negative")
        sys.exit(2)
    for crd in crds:
        if not Path(crd).exists():
            console.print(f"[red]error:[/red] --crds {crd}: no such file or directory")
            sys.exit(2)
    if nodes is not None and not Path(nodes).is_file():
        console.print(f"[red]error:[/red] --nodes {nodes}: no such file")
        sys.exit(2)
    spec = ClusterSpec(
        name=name,
        nodes=nodes,
        crds=list(crds),
        run_time_scale=run_time_scale,
        port=port,
        token=token,
        kubeconfig_scheme=kubeconfig_scheme,
    )
    try:
        asyncio.run(_serve(spec, kubeconfig_out, console))
    except ClusterStartError as error:
        console.print(f"[red]error:[/red] {error}")
        sys.exit(2)


async def _serve(spec: ClusterSpec, kubeconfig_out: str | None, console: Console) -> None:
    cluster = await start_cluster(spec)
    try:
        kubeconfig_path = cluster.kubeconfig_path
        if kubeconfig_out:
            kubeconfig_path = Path(kubeconfig_out)
            kubeconfig_path.parent.mkdir(parents=True, exist_ok=True)
            kubeconfig_path.write_text(yaml.safe_dump(cluster.kubeconfig, sort_keys=False))
            kubeconfig_path.chmod(0o600)
        console.print(f"[bold]kubesim[/bold] cluster [cyan]{cluster.name}[/cyan]")
        console.print(f"  API (http):  {cluster.url}")
        console.print(f"  API (https): {cluster.https_url}")
        console.print(f"  token:       {cluster.token}")
        console.print(f"  kubeconfig:  {kubeconfig_path}")
        console.print(f"  try:         kubectl --kubeconfig {kubeconfig_path} get nodes")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        with Live(_status(cluster), console=console, refresh_per_second=2, transient=True) as live:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(1.0):
                        await stop.wait()
                live.update(_status(cluster))
        console.print("stopping")
    finally:
        await cluster.stop()


def _status(cluster: RunningCluster) -> Text:
    store = cluster.api.store
    phases: dict[str, int] = {}
    for pod in store.items("/pods"):
        phase = (pod.get("status") or {}).get("phase", "Pending")
        phases[phase] = phases.get(phase, 0) + 1
    pods = ", ".join(f"{count} {phase}" for phase, count in sorted(phases.items())) or "none"
    return Text(
        f"resourceVersion {store.rv} | nodes {store.count('/nodes')} | "
        f"jobs {store.count('batch/jobs')} | pods: {pods}"
    )
