"""`mkq validate FILE...`: load Kueue/Kubernetes YAML and report every problem.

Exit 0 when every document is valid; 2 otherwise, after listing every error (not only the
first). With ``--skip-unsupported``, documents of kinds we do not model (RayJob, JobSet...)
are reported but do not fail the run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

import click
from pydantic import BaseModel

from kueue_api import (
    ClusterQueue,
    Cohort,
    Job,
    JobSet,
    LocalQueue,
    ResourceFlavor,
    Topology,
    Workload,
)
from kueue_api.loader import LoadedObject, LoadResult, load_documents, load_text

_SUFFIXES = (".yaml", ".yml", ".json")


def _expand(paths: Iterable[str]) -> list[Path]:
    """Files as given; directories become their YAML/JSON files, like ``kubectl apply -f``."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in _SUFFIXES)
            )
        else:
            files.append(path)
    return files


def _details(obj: BaseModel) -> str:
    """A few words about what the object does, for the one-line summary."""
    if isinstance(obj, ClusterQueue):
        flavors = [f.name for g in obj.spec.resource_groups or () for f in g.flavors]
        cohort = f", cohort {obj.spec.cohort_name}" if obj.spec.cohort_name else ""
        return f"flavors [{', '.join(flavors)}]{cohort}, {obj.spec.queueing_strategy}"
    if isinstance(obj, Cohort):
        parent = obj.spec.parent_name
        return f"parent {parent}" if parent else "root cohort"
    if isinstance(obj, LocalQueue):
        return f"-> ClusterQueue {obj.spec.cluster_queue or '<none>'}"
    if isinstance(obj, ResourceFlavor):
        labels = ", ".join(f"{k}={v}" for k, v in (obj.spec.node_labels or {}).items())
        topology = f", topology {obj.spec.topology_name}" if obj.spec.topology_name else ""
        return f"nodeLabels {{{labels}}}{topology}"
    if isinstance(obj, Workload):
        pods = sum(p.count for p in obj.spec.pod_sets)
        queue = obj.spec.queue_name or "<none>"
        return f"queue {queue}, {len(obj.spec.pod_sets)} podSets, {pods} pods"
    if isinstance(obj, Job):
        labels = obj.metadata.labels or {}
        queue = labels.get("kueue.x-k8s.io/queue-name", "<none>")
        return f"queue {queue}, parallelism {obj.spec.parallelism}"
    if isinstance(obj, JobSet):
        labels = obj.metadata.labels or {}
        queue = labels.get("kueue.x-k8s.io/queue-name", "<none>")
        jobs = obj.spec.replicated_jobs
        return f"queue {queue}, {len(jobs)} replicated Jobs, {sum(j.replicas for j in jobs)} Jobs"
    if isinstance(obj, Topology):
        return " > ".join(obj.level_labels())
    return ""


def _name(loaded: LoadedObject) -> str:
    metadata = getattr(loaded.obj, "metadata", None)
    name = getattr(metadata, "name", None) or (f"{getattr(metadata, 'generate_name', None) or ''}*")
    namespace = getattr(metadata, "namespace", None)
    kind = getattr(loaded.obj, "kind", type(loaded.obj).__name__)
    return f"{kind}/{namespace + '/' if namespace else ''}{name}"


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option(
    "--skip-unsupported",
    is_flag=True,
    help="Report documents of kinds mkq does not model, but do not fail because of them.",
)
def validate(files: tuple[str, ...], skip_unsupported: bool) -> None:
    """Load and validate Kueue/Kubernetes YAML FILES (or directories of them; - is stdin)."""
    result = LoadResult()
    for raw in files:
        part = (
            load_text(sys.stdin.read(), "<stdin>") if raw == "-" else load_documents(_expand([raw]))
        )
        result.objects.extend(part.objects)
        result.errors.extend(part.errors)
        result.warnings.extend(part.warnings)
    for loaded in result.objects:
        details = _details(loaded.obj)
        line = f"ok    {loaded.file}: document {loaded.index}: {_name(loaded)}"
        click.echo(f"{line} ({details})" if details else line)
    for warning in result.warnings:
        click.echo(f"warn  {warning}")
    skipped = [e for e in result.errors if e.unsupported and skip_unsupported]
    errors = [e for e in result.errors if not (e.unsupported and skip_unsupported)]
    for error in skipped:
        click.echo(f"skip  {error}")
    for error in errors:
        click.echo(f"error {error}", err=True)
    failed_documents = {(e.file, e.index) for e in errors}
    summary = (
        f"{len(result.objects)} valid, {len(failed_documents)} invalid"
        f"{f', {len(skipped)} unsupported skipped' if skipped else ''}"
        f"{f', {len(result.warnings)} warnings' if result.warnings else ''}"
    )
    click.echo(summary, err=bool(errors))
    sys.exit(2 if errors else 0)
