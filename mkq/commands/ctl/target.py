"""What every `mkq ctl` verb shares: where it goes (a kubeconfig or the manager), its
connection and output flags, kueuectl's kind names, and how it fails (one line, exit 2)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any, NoReturn, TypeVar

import click

from mkq.ctl import cluster as kube
from mkq.ctl.errors import CtlError
from mkq.ctl.tables import OUTPUT_FORMATS
from worker_agent.kube_client import KubeClient
from worker_agent.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    ResourceType,
)

T = TypeVar("T")

# kueuectl's names and aliases of each kind (Use and Aliases of its commands).
KINDS: dict[str, ResourceType] = {
    "clusterqueue": CLUSTER_QUEUES,
    "cq": CLUSTER_QUEUES,
    "localqueue": LOCAL_QUEUES,
    "lq": LOCAL_QUEUES,
    "workload": WORKLOADS,
    "wl": WORKLOADS,
    "resourceflavor": RESOURCE_FLAVORS,
    "rf": RESOURCE_FLAVORS,
}


@dataclass(frozen=True)
class Target:
    """Where the verbs go: a cluster's kubeconfig and context, or the manager."""

    kubeconfig: str | None = None
    context: str | None = None
    manager: str | None = None
    token: str | None = None
    namespace: str | None = None
    all_namespaces: bool = False

    async def client(self) -> KubeClient:
        path = kube.kubeconfig_path(self.kubeconfig)
        kube.context_namespace(path, self.context)  # names an unknown --context plainly
        return await kube.connect(path, self.context)

    def default_namespace(self) -> str:
        if self.namespace:
            return self.namespace
        if self.manager:
            return "default"
        return kube.context_namespace(kube.kubeconfig_path(self.kubeconfig), self.context)

    def list_namespace(self) -> str | None:
        return None if self.all_namespaces else self.default_namespace()


def fail(message: str) -> NoReturn:
    """kubectl's way: the server's own `Error from server (...)` lines as they are, any other
    mistake as `error: ...`; exit code 2."""
    if not message.startswith("Error from server"):
        message = f"error: {message}"
    click.echo(message, err=True)
    sys.exit(2)


def run_verb(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run one verb; a CtlError is the user's message and exit code 2, never a traceback."""
    try:
        return asyncio.run(make())
    except CtlError as error:
        fail(str(error))


async def with_client(target: Target, use: Callable[[KubeClient], Awaitable[T]]) -> T:
    client = await target.client()
    try:
        return await use(client)
    finally:
        await client.close()


def on_cluster(target: Target, verb: Callable[[KubeClient], Awaitable[None]]) -> None:
    """Run one verb on the target's cluster: connect, run, close; failures as `fail` says."""
    run_verb(lambda: with_client(target, verb))


def target_of(ctx: click.Context, /, **given: Any) -> Target:
    """The group's connection flags, overridden by the leaf command's own."""
    base = ctx.find_object(Target) or Target()
    changes = {k: v for k, v in given.items() if v not in (None, False)}
    return replace(base, **changes)


def connection_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        (
            click.option("--kubeconfig", help="Path to the kubeconfig file (kubectl's)."),
            click.option("--context", help="The kubeconfig context to use."),
            click.option("-n", "--namespace", help="The namespace (the context's by default)."),
        )
    ):
        func = option(func)
    return func


def output_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "-o",
        "--output",
        type=click.Choice(OUTPUT_FORMATS),
        help="Output format: wide, name, json or yaml (a table by default).",
    )(func)


def kind_and_name(func: Callable[..., Any]) -> Callable[..., Any]:
    """The KIND NAME arguments of the verbs on one object (`stop workload NAME`)."""
    return click.argument("kind")(click.argument("name")(func))


def kind_named(name: str, allowed: tuple[ResourceType, ...]) -> ResourceType:
    rt = KINDS.get(name.lower())
    if rt is None or rt not in allowed:
        names = ", ".join(sorted({k for k, v in KINDS.items() if v in allowed and len(k) > 3}))
        raise click.BadParameter(f"{name!r} is not one of: {names}", param_hint="TYPE")
    return rt


def no_manager(target: Target, verb: str) -> None:
    if target.manager:
        fail(
            f"{verb} reads one cluster: use --kubeconfig/--context instead of --manager "
            "(through the manager: list workload, list localqueue, list clusters, pending)"
        )
