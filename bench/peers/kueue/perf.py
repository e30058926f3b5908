"""Kueue's own scheduler benchmark (test/performance/scheduler), run here as Kueue's CI runs it.

`make run-performance-scheduler` in Kueue's tree starts the runner with `--minimalKueue`: the
runner starts envtest (etcd and kube-apiserver, no controller, no node), installs Kueue's CRDs,
starts minimalkueue (Kueue's core controllers and scheduler) against it, generates the
scenario's objects on their schedules, finishes admitted workloads after their runtime, and
writes `summary.yaml` (its recorder's figures) and `minimalkueue.stats.yaml` (the scheduler
process's wall, user and system milliseconds and peak RSS) when nothing is left pending.

Here the runner and minimalkueue are built from the module bench/peers/kueue/go.mod pins
(`mkq.realk8s.binaries.KUEUE`), envtest's etcd and kube-apiserver are the very programs the real
control planes run (KUBEBUILDER_ASSETS points at them), and the CRDs and generator files come
from the same Kueue module. Nothing of Kueue's source is in this repository.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mkq.realk8s.binaries import KUEUE, ensure_built, ensure_control_plane, module_file
from mkq.realk8s.clusters import STOP_WITH_PARENT

SCENARIOS = ("baseline", "tas", "large-scale")


class KueueRunError(RuntimeError):
    """Kueue's runner failed or gave no summary."""


@dataclass(frozen=True)
class KueueRun:
    """What Kueue's runner wrote: its recorder's summary and minimalkueue's process figures."""

    summary: dict[str, Any]
    wall_ms: int
    cpu_s: float
    peak_rss_mib: float
    out: Path
    real_s: float


def scenario_generator(name: str) -> Path:
    """Kueue's generator file of one of its named scenarios, from the pinned module."""
    if name not in SCENARIOS:
        raise ValueError(f"Kueue has no scheduler scenario {name!r}: one of {', '.join(SCENARIOS)}")
    return module_file(KUEUE, f"test/performance/scheduler/configs/{name}/generator.yaml")


def _envtest_assets(directory: Path) -> Path:
    """A KUBEBUILDER_ASSETS directory: this machine's etcd and kube-apiserver."""
    programs = ensure_control_plane()
    assets = directory / "envtest-assets"
    assets.mkdir(parents=True, exist_ok=True)
    for name in ("etcd", "kube-apiserver"):
        link = assets / name
        link.unlink(missing_ok=True)
        link.symlink_to(programs[name])
    return assets


def _uses_topology(generator: Path) -> bool:
    document = yaml.safe_load(generator.read_text()) or {}
    return bool(document.get("topology"))


def run_kueue(generator: Path, out: Path, *, timeout_s: float = 3600.0) -> KueueRun:
    """Kueue's runner with minimalkueue on `generator`, its outputs in `out` (blocking)."""
    programs = ensure_built(KUEUE)
    crd_dir = module_file(KUEUE, "config/components/crd/bases/kueue.x-k8s.io_workloads.yaml").parent
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("summary.yaml", "minimalkueue.stats.yaml"):
        (out / stale).unlink(missing_ok=True)
    argv = [
        # Ended with this process, however it ends: on SIGTERM the runner stops envtest.
        *STOP_WITH_PARENT,
        str(programs / "runner"),
        f"--o={out}",
        f"--crds={crd_dir}",
        f"--generatorConfig={generator}",
        f"--minimalKueue={programs / 'minimalkueue'}",
        f"--timeout={int(timeout_s)}s",
    ]
    if _uses_topology(generator):
        argv.append("--enableTAS")
    env = {
        **os.environ,
        "KUBEBUILDER_ASSETS": str(_envtest_assets(out)),
        # Kueue's test utilities look for the project's root (a Makefile) when they load; the
        # module's root stands in for a checkout of Kueue.
        "PROJECT_DIR": str(crd_dir.parents[3] / "Makefile"),
    }
    started = time.perf_counter()
    with (out / "runner.log").open("wb") as log:
        try:
            result = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                timeout=timeout_s + 120,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise KueueRunError(
                f"Kueue's runner did not end within {timeout_s + 120:.0f} s (log: {out}/runner.log)"
            ) from error
    real_s = time.perf_counter() - started
    summary_file, stats_file = out / "summary.yaml", out / "minimalkueue.stats.yaml"
    if result.returncode != 0 or not summary_file.exists() or not stats_file.exists():
        tail = (out / "runner.log").read_text(errors="replace").splitlines()[-15:]
        raise KueueRunError(
            f"Kueue's runner exited with {result.returncode} and "
            f"{'a' if summary_file.exists() else 'no'} summary; its log ends:\n" + "\n".join(tail)
        )
    stats = yaml.safe_load(stats_file.read_text())
    return KueueRun(
        summary=yaml.safe_load(summary_file.read_text()),
        wall_ms=int(stats["wallMs"]),
        cpu_s=(int(stats["userMs"]) + int(stats["sysMs"])) / 1000,
        peak_rss_mib=int(stats["maxrss"]) / 1024,  # Linux: KiB
        out=out,
        real_s=real_s,
    )
