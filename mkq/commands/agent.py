"""`mkq agent run`: the worker agent against one cluster, until interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.live import Live
from rich.text import Text

from kueue_api import Configuration
from kueue_api.loader import ConfigurationFileError, load_configuration
from mkq.profiling import profiled
from worker_agent.agent import Agent, AgentConfig, settings_from
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.webhooks import WebhookConfig


@click.group()
def agent() -> None:
    """Run the worker agent in a cluster."""


@agent.command("run")
@click.option(
    "--kubeconfig", required=True, type=click.Path(dir_okay=False), help="Kubeconfig file."
)
@click.option(
    "--cluster-name", required=True, help="This cluster's name (as the manager knows it)."
)
@click.option("--manager-url", default=None, help="The manager's base URL, for reports.")
@click.option(
    "--token",
    envvar="MKQ_AGENT_TOKEN",
    default=None,
    help="This cluster's agent token for the manager (or MKQ_AGENT_TOKEN; an argument shows "
    "in `ps`, so prefer the variable or --token-file).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="A file holding the agent token (a mounted Secret).",
)
@click.option("--metrics-port", type=int, default=None, help="Serve /healthz, /readyz, /metrics.")
@click.option("--metrics-host", default="127.0.0.1", show_default=True)
@click.option(
    "--webhook-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve Kueue's admission webhooks (HTTPS) on this port: a queued Job is created "
    "suspended, a queued Pod gated, invalid Kueue objects refused. Off by default.",
)
@click.option("--webhook-host", default="0.0.0.0", show_default=True)
@click.option(
    "--webhook-namespace",
    default="mkq-system",
    show_default=True,
    help="The agent's namespace: its webhook certificate Secret, left out by the webhooks.",
)
@click.option(
    "--webhook-service",
    default="mkq-agent-webhook",
    show_default=True,
    help="The Service kube-apiserver reaches the webhooks through (its names are in the "
    "certificate); the configurations deploy/ installs get their caBundle from the agent.",
)
@click.option(
    "--webhook-url",
    default=None,
    help="Out of cluster: the https URL kube-apiserver reaches this server at; the agent "
    "then writes the webhook configurations itself.",
)
@click.option(
    "--register-visibility",
    is_flag=True,
    default=False,
    help="With --webhook-url: also register Kueue's visibility API with the API server (the "
    "APIService and a Service naming the URL's host), which deploy/ installs in-cluster.",
)
@click.option("--context", default=None, help="Kubeconfig context (default: current).")
@click.option("--leader-elect/--no-leader-elect", default=True, show_default=True)
@click.option("--lease-namespace", default="default", show_default=True)
@click.option(
    "--lease-duration",
    type=click.FloatRange(min=1, min_open=False),
    default=15.0,
    show_default=True,
    help="Seconds a standby waits for a leader that stopped renewing (Kueue's "
    "leaderElection.leaseDuration).",
)
@click.option(
    "--renew-deadline",
    type=click.FloatRange(min=0.5),
    default=10.0,
    show_default=True,
    help="Seconds the leader keeps trying to renew before it steps down (renewDeadline).",
)
@click.option(
    "--retry-period",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="Seconds between tries to acquire or renew the Lease (retryPeriod).",
)
@click.option(
    "--report-interval",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="Seconds between reports to the manager (admissions, finishes, capacity).",
)
@click.option(
    "--wait-for-pods-ready-timeout",
    type=click.FloatRange(min=0),
    default=1800.0,
    show_default=True,
    help="Seconds an admitted workload may take to get all pods ready before it is evicted "
    "and requeued with backoff (Kueue's waitForPodsReady); 0 disables.",
)
@click.option(
    "--wait-for-pods-ready-recovery-timeout",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds a workload whose pod failed may take to get all pods ready again before it "
    "is evicted (waitForPodsReady.recoveryTimeout); default: the timeout; 0 disables.",
)
@click.option(
    "--wait-for-pods-ready-block-admission",
    is_flag=True,
    help="Admit nothing new while an admitted workload's pods are not all ready "
    "(waitForPodsReady.blockAdmission).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="A Kueue Configuration (config.kueue.x-k8s.io/v1beta2) the agent follows: "
    "fairSharing, admissionFairSharing, resources (transformations, "
    "excludeResourcePrefixes, quota check strategy, deviceClassMappings), DRA feature "
    "gates and waitForPodsReady (timeouts, blockAdmission, requeuingStrategy backoff and "
    "backoffLimitCount). --wait-for-pods-ready-* flags given explicitly override the file.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log at debug level.")
@click.pass_context
def run(
    ctx: click.Context,
    kubeconfig: str,
    cluster_name: str,
    manager_url: str | None,
    token: str | None,
    token_file: str | None,
    metrics_port: int | None,
    metrics_host: str,
    webhook_port: int | None,
    webhook_host: str,
    webhook_namespace: str,
    webhook_service: str,
    webhook_url: str | None,
    register_visibility: bool,
    context: str | None,
    leader_elect: bool,
    lease_namespace: str,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    report_interval: float,
    wait_for_pods_ready_timeout: float,
    wait_for_pods_ready_recovery_timeout: float | None,
    wait_for_pods_ready_block_admission: bool,
    config_file: str | None,
    verbose: bool,
) -> None:
    """Admit the cluster's queued Jobs and Workloads with the engine."""
    console = Console(stderr=True)
    if token_file is not None:
        if token is not None:
            console.print("[red]error:[/red] --token-file: give the token one way, not two")
            sys.exit(2)
        try:
            token = Path(token_file).read_text().strip()
        except OSError as error:
            console.print(f"[red]error:[/red] --token-file {token_file}: {error.strerror}")
            sys.exit(2)
        if not token:
            console.print(f"[red]error:[/red] --token-file {token_file}: the file is empty")
            sys.exit(2)
    if manager_url and not token:
        console.print("[red]error:[/red] --token is required with --manager-url")
        sys.exit(2)
    if not retry_period < renew_deadline < lease_duration:
        console.print(
            "[red]error:[/red] --retry-period < --renew-deadline < --lease-duration must hold "
            f"(got {retry_period}, {renew_deadline}, {lease_duration})"
        )
        sys.exit(2)
    if webhook_url is not None and webhook_port is None:
        console.print("[red]error:[/red] --webhook-url needs --webhook-port")
        sys.exit(2)
    if register_visibility and webhook_url is None:
        console.print("[red]error:[/red] --register-visibility needs --webhook-url")
        sys.exit(2)
    if webhook_url is not None and not webhook_url.startswith("https://"):
        console.print(f"[red]error:[/red] --webhook-url {webhook_url}: must be an https:// URL")
        sys.exit(2)
    if not Path(kubeconfig).is_file():
        console.print(f"[red]error:[/red] --kubeconfig {kubeconfig}: no such file")
        sys.exit(2)
    configuration = None
    if config_file is not None:
        loaded = _configuration(config_file)
        if isinstance(loaded, str):
            console.print(f"[red]error:[/red] --config {config_file}: {loaded}")
            sys.exit(2)
        configuration = loaded
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = AgentConfig(
        cluster_name=cluster_name,
        manager_url=manager_url,
        token=token,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        leader_elect=leader_elect,
        lease_namespace=lease_namespace,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=retry_period,
        report_interval=report_interval,
        webhook=WebhookConfig(
            port=webhook_port,
            host=webhook_host,
            namespace=webhook_namespace,
            service=webhook_service,
            url=webhook_url,
            register_visibility=register_visibility,
        )
        if webhook_port is not None
        else None,
        **agent_settings(ctx, configuration),
    )
    try:
        with profiled("agent"):
            asyncio.run(_run(kubeconfig, context, config, console))
    except _BadKubeconfig as error:
        console.print(f"[red]error:[/red] --kubeconfig {kubeconfig}: {error}")
        sys.exit(2)
    except _BadMetricsPort as error:
        console.print(f"[red]error:[/red] {error}")
        sys.exit(2)


_PODS_READY_FLAGS = {
    "wait_for_pods_ready_timeout": "pods_ready_timeout",
    "wait_for_pods_ready_recovery_timeout": "pods_ready_recovery_timeout",
    "wait_for_pods_ready_block_admission": "block_admission",
}
"""--wait-for-pods-ready-* parameters and the AgentConfig field each sets."""


def agent_settings(ctx: click.Context, configuration: Configuration | None) -> dict[str, Any]:
    """The AgentConfig fields `configuration` and the flags set: the file's settings, with
    the flags given on the command line on top; without a file, the flags (defaults
    included) alone, as before --config existed."""
    flags: dict[str, Any] = {field: ctx.params[param] for param, field in _PODS_READY_FLAGS.items()}
    # A zero timeout turns waitForPodsReady off.
    flags["pods_ready_timeout"] = flags["pods_ready_timeout"] or None
    if configuration is None:
        return flags
    explicit = {
        field: flags[field]
        for param, field in _PODS_READY_FLAGS.items()
        if ctx.get_parameter_source(param) == click.core.ParameterSource.COMMANDLINE
    }
    return {**settings_from(configuration), **explicit}


def _configuration(path: str) -> Configuration | str:
    """The one Configuration in `path`, or what is wrong with the file."""
    try:
        return load_configuration(path)
    except ConfigurationFileError as error:
        return str(error)


class _BadKubeconfig(Exception):
    pass


class _BadMetricsPort(Exception):
    pass


async def _run(kubeconfig: str, context: str | None, config: AgentConfig, console: Console) -> None:
    try:
        client = await KubeClient.from_kubeconfig(kubeconfig, context)
    except Exception as error:  # the kubeconfig library raises many kinds
        raise _BadKubeconfig(str(error) or type(error).__name__) from None
    try:
        await client.request("GET", "/version")
    except (ApiError, OSError) as error:
        console.print(f"[yellow]warning:[/yellow] cluster not reachable yet ({error}); retrying")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    agent_ = Agent(config, client)
    try:
        await agent_.start()
    except OSError as error:
        await agent_.stop()
        await client.close()
        raise _BadMetricsPort(f"--metrics-port {config.metrics_port}: {error.strerror}") from None
    try:
        with Live(_status(agent_), console=console, refresh_per_second=2, transient=True) as live:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.5):
                        await stop.wait()
                live.update(_status(agent_))
    finally:
        await agent_.stop()
        await client.close()
    console.print(f"agent for cluster {config.cluster_name} stopped")


def _status(agent_: Agent) -> Text:
    role = "leader" if agent_.is_leader else "standby"
    state = "synced" if agent_.ready else "syncing caches"
    port = f", metrics on :{agent_.health_port}" if agent_.health_port else ""
    return Text(f"mkq agent [{agent_.config.cluster_name}] {role}, {state}{port}")
