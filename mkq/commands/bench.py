"""`mkq bench`: benchmarks measured on Kueue's own scenarios and read against the floor.

`scheduler` is bench/scheduler; `dispatch` is the manager's benchmark, mounted from
`bench.dispatch` (a click command named `dispatch`) once that package provides it.
"""

from __future__ import annotations

import importlib
import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from bench.scheduler.generator import GeneratorError
from bench.scheduler.simulation import ProgressCallback, SimulationError


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is None or not name.startswith(error.name):
            raise
        return None


def _dispatch_command() -> click.Command | None:
    """The manager's benchmark: a click command `bench.dispatch.dispatch`, or the argparse
    `main()` of `bench.dispatch.run`, which gets the arguments as its sys.argv."""
    module = _import("bench.dispatch")
    command = getattr(module, "dispatch", None) if module is not None else None
    if isinstance(command, click.Command):
        return command
    runner = _import("bench.dispatch.run") if module is not None else None
    main = getattr(runner, "main", None) if runner is not None else None
    return _passthrough(main) if callable(main) else None


def _passthrough(main: Callable[[], None]) -> click.Command:
    @click.command(
        name="dispatch",
        help="The manager's dispatch benchmark (bench/dispatch); --help lists its options.",
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    @click.pass_context
    def dispatch(ctx: click.Context) -> None:
        saved = sys.argv
        sys.argv = ["mkq bench dispatch", *ctx.args]
        try:
            main()
        finally:
            sys.argv = saved

    return dispatch


def _dispatch_unavailable() -> click.Command:
    @click.command(
        name="dispatch",
        help="The manager's dispatch benchmark (not yet available).",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    def dispatch() -> None:
        click.echo("mkq bench dispatch: not yet available in this build", err=True)
        sys.exit(2)

    return dispatch


class BenchGroup(click.Group):
    """`scheduler` is built in; `dispatch` is looked up when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), "dispatch"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "dispatch":
            return _dispatch_command() or _dispatch_unavailable()
        return super().get_command(ctx, cmd_name)


@click.group(cls=BenchGroup)
def bench() -> None:
    """Benchmarks against Kueue's published figures and the floor."""


def _progress_bar(console: Console, total: int, mode: str) -> tuple[Progress, ProgressCallback]:
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("finished · {task.fields[clock]} {task.fields[sim]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    clock = "simulated" if mode == "engine" else "wall"
    task = progress.add_task("workloads", total=total, sim="0.0 s", clock=clock)
    last = [0.0]

    def update(finished: int, total_: int, now_ms: int) -> None:
        moment = time.monotonic()
        if moment - last[0] < 0.2 and finished < total_:
            return
        last[0] = moment
        progress.update(task, completed=finished, sim=f"{now_ms / 1000:,.1f} s")

    return progress, update


@bench.command()
@click.option(
    "--generator",
    "generator",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Kueue generator file (test/performance/scheduler format).",
)
@click.option(
    "--rangespec",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Kueue rangespec file: thresholds to check the run against.",
)
@click.option(
    "--mode",
    type=click.Choice(["engine", "cluster", "real"]),
    default="engine",
    show_default=True,
    help=(
        "engine: the engine on a simulated clock; cluster: kubesim + the real agent; "
        "real: a real kube-apiserver and etcd (as Kueue's envtest) + the real agent."
    ),
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Output directory (default ./bench-out/scheduler-<name>).",
)
@click.option("--name", help="Scenario name (default: the generator's directory name).")
@click.option(
    "--time-limit",
    type=float,
    default=3600.0,
    show_default=True,
    help="Cluster and real modes: give up after this many seconds.",
)
@click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")
def scheduler(
    generator: Path,
    rangespec: Path | None,
    mode: str,
    out: Path | None,
    name: str | None,
    time_limit: float,
    no_progress: bool,
) -> None:
    """Run Kueue's scheduler-performance scenario on mkq and compare with Kueue's figures.

    Prints summary.json on stdout. Exit 0 when the run completes (and every rangespec threshold
    holds), 1 when a rangespec threshold fails, 2 on bad input.
    """
    from bench.scheduler.cluster import ClusterRunError
    from bench.scheduler.run import RunRequest, load_scenario, run_cluster_mode, run_engine
    from mkq.realk8s.binaries import BuildError
    from mkq.realk8s.clusters import ClusterStartError

    words = ["mkq", "bench", "scheduler", "--generator", str(generator)]
    if rangespec is not None:
        words += ["--rangespec", str(rangespec)]
    words += ["--mode", mode]
    if mode in ("cluster", "real"):
        words += ["--time-limit", f"{time_limit:g}"]
    if out is not None:
        words += ["--out", str(out)]
    if name is not None:
        words += ["--name", name]
    request = RunRequest(generator, rangespec, mode, out, name, shlex.join(words))
    err = Console(stderr=True)

    def run(progress: ProgressCallback | None) -> dict[str, Any]:
        if mode in ("cluster", "real"):
            return run_cluster_mode(request, progress, time_limit_s=time_limit)
        return run_engine(request, progress)

    try:
        total = len(load_scenario(request).arrivals)
        if no_progress:
            document = run(None)
        else:
            progress, update = _progress_bar(err, total, mode)
            with progress:
                document = run(update)
    except GeneratorError as error:
        click.echo(f"mkq bench scheduler: {error}", err=True)
        sys.exit(2)
    except (SimulationError, ClusterRunError, ClusterStartError, BuildError) as error:
        click.echo(f"mkq bench scheduler: the run did not complete: {error}", err=True)
        sys.exit(1)
    click.echo(json.dumps(document, indent=2))
    files = document["files"]
    click.echo(f"wrote {files['summary']}, {files['table']}, {files['plot']}", err=True)
    if not document.get("completed", True):
        click.echo(f"mkq bench scheduler: the run did not complete: {document['error']}", err=True)
        sys.exit(1)
    spec = document.get("rangespec")
    if spec is not None and not spec["passed"]:
        sys.exit(1)


@bench.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--glob", "pattern", default="*.yaml", show_default=True, help="Which scenarios.")
@click.option(
    "--keep", type=click.Path(path_type=Path, file_okay=False), help="Keep Kueue's files."
)
def agree(directory: Path, pattern: str, keep: Path | None) -> None:
    """Decide every scenario of DIRECTORY with mkq's engine and with Kueue itself.

    Kueue v0.17.0 (bench/peers/kueue) runs on one real control plane, started once; see
    bench/peers/kueue/oracle.py. Prints agree/differ per scenario (with the decisions that
    differ) and ends with `A of N agree`. Exit 0 when all agree, 1 otherwise.
    """
    from bench.peers.kueue.agreement import compare
    from bench.peers.kueue.oracle import oracle
    from mkq.commands.simulate import simulate_paths

    scenarios = sorted(directory.glob(pattern))
    agreeing = 0
    with oracle(keep) as kueue:
        for outcome in compare(scenarios, lambda path: simulate_paths([path]), kueue.decide):
            if outcome.agrees:
                agreeing += 1
                click.echo(f"agree   {outcome.scenario.name}")
                continue
            click.echo(f"differ  {outcome.scenario.name}")
            if outcome.error is not None:
                click.echo(f"    error: {outcome.error}")
            for line in outcome.differences:
                click.echo(f"    {line}")
    click.echo(f"{agreeing} of {len(scenarios)} agree")
    sys.exit(0 if agreeing == len(scenarios) else 1)


@bench.command(name="compare")
@click.option(
    "--scenario",
    type=click.Choice(["baseline", "tas", "large-scale"]),
    help="One of Kueue's scheduler scenarios (its generator file, from the pinned module).",
)
@click.option(
    "--generator",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A generator file of Kueue's format instead of a named scenario.",
)
@click.option(
    "--dispatch",
    is_flag=True,
    help="Dispatch instead: Kueue's MultiKueue against mkq's manager and agents on four control "
    "planes (a manager cluster, three workers), the same Jobs at the same client rate.",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 100_000),
    default=1000,
    show_default=True,
    help="With --dispatch: Jobs posted to the manager cluster.",
)
@click.option(
    "--qps",
    type=click.FloatRange(0.1, 10_000, min_open=False),
    default=100.0,
    show_default=True,
    help="With --dispatch: the client's rate of Job creations.",
)
@click.option(
    "--worker-qps",
    type=click.FloatRange(0.1, 100_000),
    help="With --dispatch: mkq's manager's requests per second to each worker (bursts of "
    "twice that; default: the manager's own). 5 is MultiKueue's: client-go's default, which "
    "Kueue does not change for its worker clients.",
)
@click.option(
    "--dispatcher",
    type=click.Choice(["AllAtOnce", "Incremental", "BestFit"]),
    help="With --dispatch: mkq's dispatcher (default: the manager's own, AllAtOnce, which is "
    "also MultiKueue's default).",
)
@click.option(
    "--keep",
    type=click.Path(path_type=Path, file_okay=False),
    help="With --dispatch: keep every run's logs (control planes, Kueue, mkq) here.",
)
@click.option(
    "--database-url",
    envvar="MKQ_TEST_DATABASE_URL",
    default="postgresql+asyncpg://postgres@127.0.0.1:5432/test",
    show_default=True,
    help="With --dispatch: the Postgres server where mkq's manager gets a fresh database.",
)
@click.option("--repeat", type=click.IntRange(1, 50), default=1, show_default=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Output directory (default ./bench-out/compare-<scenario>, or compare-dispatch).",
)
@click.option(
    "--time-limit",
    type=float,
    default=3600.0,
    show_default=True,
    help="Give up on a run after this many seconds.",
)
@click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")
def compare_command(
    scenario: str | None,
    generator: Path | None,
    dispatch: bool,
    jobs: int,
    qps: float,
    worker_qps: float | None,
    dispatcher: str | None,
    keep: Path | None,
    database_url: str,
    repeat: int,
    out: Path | None,
    time_limit: float,
    no_progress: bool,
) -> None:
    """Kueue's scheduler benchmark side by side: Kueue's own runner with minimalkueue, and
    `mkq bench scheduler --mode real`, on freshly started control planes of the same programs.

    Prints one table (each figure as mkq / Kueue, the median over --repeat pairs, run
    alternately) and writes compare.json, compare.md and compare.png. Exit 0 when every run
    completed, 1 when one did not, 2 on bad input.

    With --dispatch: Kueue's MultiKueue and mkq's manager, each on four fresh control planes,
    the same Jobs posted to the manager cluster (bench/dispatch/side_by_side.py).
    """
    if dispatch:
        if scenario is not None or generator is not None:
            raise click.UsageError("--dispatch takes no --scenario or --generator")
        _compare_dispatch(
            jobs=jobs,
            qps=qps,
            worker_qps=worker_qps,
            dispatcher=dispatcher,
            keep=keep,
            database_url=database_url,
            repeat=repeat,
            out=out,
            time_limit=time_limit,
            no_progress=no_progress,
        )
        return
    from bench.peers.kueue.perf import KueueRunError, scenario_generator
    from bench.scheduler.cluster import ClusterRunError
    from bench.scheduler.generator import load_generator
    from bench.scheduler.run import scenario_name
    from bench.scheduler.side_by_side import CompareRequest, compare
    from mkq.realk8s.binaries import BuildError
    from mkq.realk8s.clusters import ClusterStartError

    if (scenario is None) == (generator is None):
        raise click.UsageError("name one of --scenario and --generator")
    err = Console(stderr=True)
    try:
        path = generator if generator is not None else scenario_generator(str(scenario))
        load_generator(path)  # refuse a bad file before anything starts
    except GeneratorError as error:
        click.echo(f"mkq bench compare: {error}", err=True)
        sys.exit(2)
    except BuildError as error:
        click.echo(f"mkq bench compare: {error}", err=True)
        sys.exit(1)
    name = scenario or scenario_name(path)
    words = ["mkq", "bench", "compare"]
    words += ["--scenario", name] if scenario else ["--generator", str(path)]
    words += ["--repeat", str(repeat)]
    request = CompareRequest(
        scenario=name,
        generator=path,
        repeat=repeat,
        out=out or Path("bench-out") / f"compare-{name}",
        time_limit_s=time_limit,
        command=shlex.join(words),
    )

    def announce(line: str) -> None:
        err.print(f"[bold]{line}[/bold]")

    try:
        comparison, document = compare(request, announce)
    except (KueueRunError, ClusterRunError, ClusterStartError, BuildError, RuntimeError) as error:
        click.echo(f"mkq bench compare: a run did not complete: {error}", err=True)
        sys.exit(1)
    _print_comparison(f"{name}: mkq beside Kueue", "Kueue", repeat, comparison.markdown())
    files = document["files"]
    click.echo(f"wrote {files['json']}, {files['table']}, {files['plot']}", err=True)


def _print_comparison(title: str, peer: str, repeat: int, markdown: str) -> None:
    """A comparison's Markdown table (compare.md) as a rich table."""
    table = Table(title=f"{title} ({repeat} pair{'s' if repeat > 1 else ''})")
    for column in ("", "mkq", peer, f"mkq / {peer}", "target"):
        table.add_column(column, justify="left" if column in ("", "target") else "right")
    for line in markdown.splitlines()[2:]:
        table.add_row(*[cell.strip() for cell in line.strip("|").split("|")])
    Console().print(table)


def _compare_dispatch(
    *,
    jobs: int,
    qps: float,
    worker_qps: float | None,
    dispatcher: str | None,
    keep: Path | None,
    database_url: str,
    repeat: int,
    out: Path | None,
    time_limit: float,
    no_progress: bool,
) -> None:
    from bench.dispatch import side_by_side
    from bench.dispatch.side_by_side import DispatchRequest
    from mkq.realk8s.binaries import BuildError
    from mkq.realk8s.clusters import ClusterStartError

    words = ["mkq", "bench", "compare", "--dispatch", "--jobs", str(jobs), "--qps", f"{qps:g}"]
    if worker_qps is not None:
        words += ["--worker-qps", f"{worker_qps:g}"]
    if dispatcher is not None:
        words += ["--dispatcher", dispatcher]
    words += ["--repeat", str(repeat)]
    request = DispatchRequest(
        jobs=jobs,
        qps=qps,
        repeat=repeat,
        out=out or Path("bench-out") / "compare-dispatch",
        time_limit_s=time_limit,
        database_url=database_url,
        command=shlex.join(words),
        worker_qps=worker_qps,
        dispatcher=dispatcher,
        keep=keep,
    )
    err = Console(stderr=True)
    side_by_side.console.quiet = no_progress
    try:
        comparison, document = side_by_side.compare(
            request, lambda line: err.print(f"[bold]{line}[/bold]")
        )
    except (ClusterStartError, BuildError, RuntimeError, TimeoutError, OSError) as error:
        click.echo(f"mkq bench compare --dispatch: a run did not complete: {error}", err=True)
        sys.exit(1)
    title = f"dispatch, {jobs} Jobs: mkq beside MultiKueue"
    _print_comparison(title, "MultiKueue", repeat, comparison.markdown())
    files = document["files"]
    click.echo(f"wrote {files['json']}, {files['table']}, {files['plot']}", err=True)
