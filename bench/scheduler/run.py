"""One `mkq bench scheduler` run, from the files on the command line to the written outputs."""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.scheduler.floor import Floor, compute_floor
from bench.scheduler.generator import load_generator
from bench.scheduler.metrics import Recorder, Summary
from bench.scheduler.published import published_for
from bench.scheduler.rangespec import RangeSpec, load_rangespec, verdict
from bench.scheduler.report import RunCost, RunResult, write_outputs
from bench.scheduler.scenario import Scenario, build_scenario
from bench.scheduler.simulation import ProgressCallback, Sample, SchedulerPort, Simulation


@dataclass(frozen=True)
class RunRequest:
    generator: Path
    rangespec: Path | None
    mode: str
    out: Path | None
    name: str | None
    command: str


def scenario_name(generator: Path) -> str:
    """`baseline` for .../baseline/generator.yaml, else the file's stem."""
    if generator.stem == "generator" and generator.parent.name:
        return generator.parent.name
    return generator.stem


def default_out(name: str) -> Path:
    return Path("bench-out") / f"scheduler-{name}"


def _process_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_memory_mib() -> float:
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024 if sys.platform != "darwin" else kib / 2**20


def load_scenario(request: RunRequest) -> Scenario:
    """Read and expand the generator (GeneratorError on bad input)."""
    generator = load_generator(request.generator)
    return build_scenario(generator, request.name or scenario_name(request.generator))


def run_engine(
    request: RunRequest,
    progress: ProgressCallback | None = None,
    port_factory: Callable[[Scenario], SchedulerPort] | None = None,
) -> dict[str, Any]:
    """Engine mode: simulate, compute the figures, write summary.json, table.md and plot.png."""
    spec = load_rangespec(request.rangespec) if request.rangespec else None
    scenario = load_scenario(request)
    floor = compute_floor(scenario)
    cpu_before = _process_cpu_s()
    started = time.perf_counter()
    if port_factory is None:
        from bench.scheduler.engine_port import EnginePort

        port_factory = EnginePort
    port = port_factory(scenario)
    recorder = Recorder()
    stats = Simulation(scenario, port, recorder, progress).run()
    summary = recorder.summary(stats.wall_ms)
    cost = RunCost(
        admissions=stats.admissions,
        evictions=stats.evictions,
        cycles=stats.cycles,
        scheduling_cpu_s=stats.scheduling_cpu_s,
        bookkeeping_cpu_s=stats.bookkeeping_cpu_s,
        process_cpu_s=_process_cpu_s() - cpu_before,
        real_s=time.perf_counter() - started,
        peak_memory_mib=_peak_memory_mib(),
    )
    out = request.out or default_out(scenario.name)
    return _write(request, "engine", scenario, floor, spec, summary, cost, stats.samples, out)


def run_cluster_mode(
    request: RunRequest, progress: ProgressCallback | None = None, time_limit_s: float = 3600.0
) -> dict[str, Any]:
    """Cluster mode (kubesim) or real mode (kube-apiserver and etcd) + the agent on the wall
    clock; the same outputs as engine mode (`request.mode` names the API server).

    CPU and memory are the agent process's (the scheduler), as Kueue reports minimalkueue's.
    """
    from bench.scheduler.cluster import run_cluster

    spec = load_rangespec(request.rangespec) if request.rangespec else None
    scenario = load_scenario(request)
    floor = compute_floor(scenario)
    recorder = Recorder()
    out = request.out or default_out(scenario.name)
    backend = "real" if request.mode == "real" else "kubesim"
    stats = run_cluster(
        scenario, recorder, progress, time_limit_s, agent_log=out / "agent.log", backend=backend
    )
    summary = recorder.summary(stats.wall_ms)
    cost = RunCost(
        admissions=stats.admissions,
        evictions=stats.evictions,
        cycles=0,
        scheduling_cpu_s=stats.agent_cpu_s,
        bookkeeping_cpu_s=0.0,
        process_cpu_s=stats.agent_cpu_s,
        harness_cpu_s=stats.harness_cpu_s,
        real_s=stats.real_s,
        peak_memory_mib=stats.agent_peak_memory_mib,
        startup_ms=stats.agent_startup_ms,
    )
    return _write(
        request, request.mode, scenario, floor, spec, summary, cost, stats.samples, out, stats.error
    )


def _write(
    request: RunRequest,
    mode: str,
    scenario: Scenario,
    floor: Floor,
    spec: RangeSpec | None,
    summary: Summary,
    cost: RunCost,
    samples: Sequence[Sample],
    out: Path,
    error: str | None = None,
) -> dict[str, Any]:
    """Both modes report alike, so their outputs compare column for column."""
    result = RunResult(
        scenario=scenario,
        mode=mode,
        command=request.command,
        summary=summary,
        cost=cost,
        floor=floor,
        published=published_for(scenario.name, len(scenario.arrivals)),
        checks=verdict(summary, spec) if spec else None,
        rangespec_file=spec.file if spec else None,
        samples=samples,
        error=error,
    )
    return write_outputs(result, out)
