"""`mkq simulate FILE... [-o json|yaml]`: the admission engine alone, run to a quiescent state.

The files hold Kueue v1beta2 objects, core objects and optionally one Configuration. Workloads
that already carry status.admission with QuotaReserved=True hold quota from the start. Cycles run
until none changes anything; no time passes, so nothing running finishes. The result is one
object: {"workloads": {"ns/name": {"admitted", "quotaReserved", "admissionChecks",
"clusterQueue", "podSets", "evictions", "reason", "message"}}}; "reason" and "message" say, in
Kueue's words, why a workload is not admitted (no quota yet, or checks not all Ready). As in
Kueue, an AdmissionCheck without an Active=True condition makes its ClusterQueues inactive.
Anything that cannot be loaded is reported with file, document and field (exit 2).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import click
import yaml

import kueue_api as api
from kueue_api.loader import LoadedObject, load_documents
from worker_agent.engine import EngineState, StateBuilder, run_until_quiescent, simulation_report
from worker_agent.engine.quiescence import NoQuiescence


class SimulationInputError(Exception):
    """The input cannot be simulated; `problems` are messages naming file, document, field."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


def _where(item: LoadedObject) -> str:
    obj: Any = item.obj
    meta = getattr(obj, "metadata", None)
    name = getattr(meta, "name", None) or ""
    namespace = getattr(meta, "namespace", None)
    if namespace:
        name = f"{namespace}/{name}"
    kind = getattr(obj, "kind", type(obj).__name__)
    return f"{item.file}: document {item.index} ({kind}/{name})"


def _identity(item: LoadedObject) -> tuple[str, str]:
    obj: Any = item.obj
    meta = getattr(obj, "metadata", None)
    name = getattr(meta, "name", None) or ""
    namespace = getattr(meta, "namespace", None) or ""
    return getattr(obj, "kind", ""), f"{namespace}/{name}" if namespace else name


def _check_references(objects: list[LoadedObject]) -> list[str]:
    """References that cannot be right: an admission naming a ClusterQueue, flavor or
    podSet that does not exist, a duplicate object, more than one Configuration."""
    problems: list[str] = []
    seen: dict[tuple[str, str], LoadedObject] = {}
    configs = 0
    for item in objects:
        ident = _identity(item)
        if isinstance(item.obj, api.Configuration):
            configs += 1
            if configs > 1:
                problems.append(f"{_where(item)}: only one Configuration may be given")
            continue
        if ident in seen:
            first = seen[ident]
            problems.append(
                f"{_where(item)}: metadata.name: Duplicate value: already defined in "
                f"{first.file}: document {first.index}"
            )
        seen[ident] = item
    cqs = {name for kind, name in seen if kind == "ClusterQueue"}
    flavors = {name for kind, name in seen if kind == "ResourceFlavor"}
    for item in objects:
        obj = item.obj
        if not isinstance(obj, api.Workload) or obj.status.admission is None:
            continue
        admission = obj.status.admission
        if admission.cluster_queue not in cqs:
            problems.append(
                f"{_where(item)}: status.admission.clusterQueue: Not found: "
                f"{admission.cluster_queue!r}"
            )
        names = {ps.name for ps in obj.spec.pod_sets}
        for i, psa in enumerate(admission.pod_set_assignments):
            path = f"status.admission.podSetAssignments[{i}]"
            if psa.name not in names:
                problems.append(f"{_where(item)}: {path}.name: Not found: {psa.name!r}")
            for res, flavor in (psa.flavors or {}).items():
                if flavor not in flavors:
                    problems.append(f"{_where(item)}: {path}.flavors.{res}: Not found: {flavor!r}")
    return problems


def _latest_time(objects: list[LoadedObject]) -> float:
    """The simulation's 'now': the latest timestamp in the input, so no time passes."""
    latest = 0.0

    def visit(value: Any) -> None:
        nonlocal latest
        if isinstance(value, datetime):
            latest = max(latest, value.timestamp())
        elif isinstance(value, api.Quantity):
            return
        elif hasattr(value, "__pydantic_fields__"):
            for field_name in type(value).model_fields:
                visit(getattr(value, field_name))
        elif isinstance(value, list | tuple):
            for element in value:
                visit(element)
        elif isinstance(value, dict):
            for element in value.values():
                visit(element)

    for item in objects:
        if isinstance(item.obj, api.Workload):
            visit(item.obj.metadata)
            visit(item.obj.status)
    return latest


def simulate_paths(paths: Sequence[str | Path]) -> dict[str, Any]:
    """Load the files, run the engine to quiescence, return the report."""
    loaded = load_documents(paths)
    if loaded.errors:
        raise SimulationInputError([str(error) for error in loaded.errors])
    problems = _check_references(loaded.objects)
    if problems:
        raise SimulationInputError(problems)
    state = EngineState()
    builder = StateBuilder(state)
    ordered = sorted(
        loaded.objects,
        key=lambda item: (
            0
            if isinstance(item.obj, api.Configuration)
            else 1
            if isinstance(item.obj, api.WorkloadPriorityClass)
            else 3
            if isinstance(item.obj, api.Workload)
            else 2
        ),
    )
    for item in ordered:
        builder.apply(item.obj)
    now = _latest_time(loaded.objects)
    try:
        run_until_quiescent(state, now)
    except NoQuiescence as error:
        raise SimulationInputError([str(error)]) from None
    return simulation_report(state)


@click.command(name="simulate")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "-o", "--output", type=click.Choice(["json", "yaml"]), default="json", show_default=True
)
def simulate(files: tuple[str, ...], output: str) -> None:
    """Run the admission engine on FILES until nothing changes; print the outcome."""
    try:
        report = simulate_paths(files)
    except SimulationInputError as error:
        for problem in error.problems:
            click.echo(problem, err=True)
        sys.exit(2)
    if output == "yaml":
        click.echo(yaml.safe_dump(report, sort_keys=False), nl=False)
    else:
        click.echo(json.dumps(report, indent=2))
