"""`mkq ctl`: kueuectl's everyday verbs (Kueue's `cmd/kueuectl/app/`): list, describe,
create, stop, resume, and the pending positions of a queue. Against one cluster through a
kubeconfig, or, with `--manager`, against every cluster through the manager's REST API."""

from __future__ import annotations

import click

from mkq.commands.ctl.changes import create, resume, stop
from mkq.commands.ctl.inspection import describe, pending
from mkq.commands.ctl.listing import list_group
from mkq.commands.ctl.target import KINDS, Target


@click.group()
@click.option("--kubeconfig", help="Path to the kubeconfig file (kubectl's).")
@click.option("--context", help="The kubeconfig context to use.")
@click.option(
    "--manager",
    envvar="MKQ_MANAGER_URL",
    help="The manager's URL: read every cluster through its REST API.",
)
@click.option("--token", envvar="MKQ_API_TOKEN", help="The manager's API token.")
@click.pass_context
def ctl(
    ctx: click.Context,
    kubeconfig: str | None,
    context: str | None,
    manager: str | None,
    token: str | None,
) -> None:
    """kueuectl's everyday verbs: list, describe, create, stop, resume, pending."""
    ctx.obj = Target(kubeconfig=kubeconfig, context=context, manager=manager, token=token)


for _verb in (list_group, describe, create, stop, resume, pending):
    ctl.add_command(_verb)

# kueuectl's aliases of list's and create's kinds (cq, lq, wl, rf).
for _group, _names in (
    (list_group, ("clusterqueue", "localqueue", "workload", "resourceflavor")),
    (create, ("clusterqueue", "localqueue", "resourceflavor")),
):
    for _name in _names:
        for _alias, _rt in KINDS.items():
            if len(_alias) <= 3 and _rt == KINDS[_name]:
                _group.add_command(_group.commands[_name], name=_alias)
