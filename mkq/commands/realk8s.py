"""`mkq realk8s`: real Kubernetes control planes on loopback ports (scripts/realk8s.sh)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mkq.realk8s.binaries import (
    BuildError,
    ensure_control_plane,
    ensure_module_files,
    ensure_peers,
)
from mkq.realk8s.clusters import ClusterStartError, start_clusters, stop_clusters


@click.group()
def realk8s() -> None:
    """Real control planes: kube-apiserver, etcd, controller-manager, scheduler, KWOK nodes."""


@realk8s.command("build")
def build() -> None:
    """Build the control plane's programs and the job kinds' operators from their Go modules,
    or find them cached (and fetch the CRDs the tests take from Go modules)."""
    try:
        programs = {**ensure_control_plane(), **ensure_peers()}
        files = ensure_module_files()
    except BuildError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    for name, path in programs.items():
        click.echo(f"{name}\t{path}")
    for path in files:
        click.echo(f"{path.name}\t{path}")


@realk8s.command("up")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.argument("names", nargs=-1, required=True)
def up(directory: Path, names: tuple[str, ...]) -> None:
    """Start one cluster per NAME; write DIRECTORY/NAME.kubeconfig (admin) for each."""
    try:
        clusters = start_clusters(directory, names, aggregation=True)
    except (BuildError, ClusterStartError) as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    except ValueError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    for name, cluster in clusters.items():
        click.echo(f"{name}\t{cluster.server}\t{cluster.kubeconfig_path}")


@realk8s.command("down")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
def down(directory: Path) -> None:
    """Stop every process the clusters in DIRECTORY run."""
    stop_clusters(directory)
