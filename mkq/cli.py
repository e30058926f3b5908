"""The `mkq` entry point.

Subcommands are loaded lazily, so `mkq validate` does not pay for importing the manager's
database stack or the agent's Kubernetes client, and one broken part cannot break the others.
"""

from __future__ import annotations

import importlib
import sys

import click

# name -> "module:attribute" of a click command or group.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("mkq.commands.validate:validate", "Load and validate Kueue/Kubernetes YAML."),
    "simulate": (
        "mkq.commands.simulate:simulate",
        "Run the admission engine to a quiescent state.",
    ),
    "kubesim": ("mkq.commands.kubesim:kubesim", "Run an emulated Kubernetes cluster."),
    "agent": ("mkq.commands.agent:agent", "Run the worker agent in a cluster."),
    "manager": ("mkq.commands.manager:manager", "Run or migrate the multi-cluster manager."),
    "bench": ("mkq.commands.bench:bench", "Benchmarks against Kueue's published figures."),
    "demo": ("mkq.commands.demo:demo", "The whole system on embedded defaults."),
    "ctl": (
        "mkq.commands.ctl:ctl",
        "kueuectl's verbs: list, describe, create, stop, resume, pending.",
    ),
    "realk8s": (
        "mkq.commands.realk8s:realk8s",
        "Real Kubernetes control planes (kube-apiserver, etcd, KWOK nodes) on loopback.",
    ),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = SUBCOMMANDS.get(cmd_name)
        if entry is None:
            return None
        target, help_text = entry
        module_name, attribute = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            return _unavailable(cmd_name, help_text)
        command = getattr(module, attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command


def _unavailable(name: str, help_text: str) -> click.Command:
    @click.command(
        name=name,
        help=f"{help_text} (not yet available)",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    def command() -> None:
        click.echo(f"mkq {name}: not yet available in this build", err=True)
        sys.exit(2)

    return command


@click.group(cls=LazyGroup)
@click.version_option(package_name="mkq")
def cli() -> None:
    """mkq: a Kueue-compatible, multi-cluster batch dispatcher."""


def main() -> None:
    cli()
