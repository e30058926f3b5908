"""`mkq bench compare`: Kueue's runner with minimalkueue and mkq's real mode, one after the
other on freshly started control planes of the same programs, repeated and alternated.

Each side starts its own etcd and kube-apiserver (the same builds: Kueue's runner through
envtest, mkq through mkq/realk8s with envtest's request limits) and nothing else, runs the same
generator file, and ends them. Pair i runs Kueue first when i is even and mkq first when it is
odd, so a trend in the machine's load falls on both sides alike.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.peers.kueue.perf import run_kueue
from bench.scheduler.compare import Comparison, Figures, from_kueue, from_mkq
from bench.scheduler.run import RunRequest, run_cluster_mode
from bench.scheduler.simulation import ProgressCallback


@dataclass(frozen=True)
class CompareRequest:
    scenario: str
    generator: Path
    repeat: int
    out: Path
    time_limit_s: float
    command: str


def _load() -> tuple[float, float, float]:
    one, five, fifteen = os.getloadavg()
    return (round(one, 2), round(five, 2), round(fifteen, 2))


def run_mkq_side(request: CompareRequest, out: Path, progress: ProgressCallback | None) -> Figures:
    words = shlex.join(
        ["mkq", "bench", "scheduler", "--generator", str(request.generator), "--mode", "real"]
    )
    run = RunRequest(request.generator, None, "real", out, request.scenario, words)
    document = run_cluster_mode(run, progress, time_limit_s=request.time_limit_s)
    if not document.get("completed", True):
        raise RuntimeError(f"mkq's run did not complete: {document.get('error')}")
    return from_mkq(document, _load())


def run_kueue_side(request: CompareRequest, out: Path) -> Figures:
    run = run_kueue(request.generator, out, timeout_s=request.time_limit_s)
    return from_kueue(run.summary, run.wall_ms, run.cpu_s, run.peak_rss_mib, _load())


def compare(
    request: CompareRequest,
    announce: Callable[[str], None] = lambda _: None,
    progress: ProgressCallback | None = None,
) -> tuple[Comparison, dict[str, Any]]:
    """Run the pairs, write compare.json, compare.md and compare.png; returns the comparison
    and the JSON document."""
    pairs: list[tuple[Figures, Figures]] = []
    for index in range(request.repeat):
        run_dir = request.out / f"pair-{index + 1}"
        order = ("kueue", "mkq") if index % 2 == 0 else ("mkq", "kueue")
        figures: dict[str, Figures] = {}
        for side in order:
            announce(
                f"pair {index + 1} of {request.repeat}: {'Kueue' if side == 'kueue' else 'mkq'}"
            )
            if side == "kueue":
                figures[side] = run_kueue_side(request, run_dir / "kueue")
            else:
                figures[side] = run_mkq_side(request, run_dir / "mkq", progress)
        pairs.append((figures["mkq"], figures["kueue"]))
    comparison = Comparison(request.scenario, pairs)
    document = {
        **comparison.as_json(),
        "command": request.command,
        "generator": str(request.generator),
        "order": "pair i runs Kueue first when i is odd (1, 3, ...), mkq first otherwise",
        "files": {
            "json": str(request.out / "compare.json"),
            "table": str(request.out / "compare.md"),
            "plot": str(request.out / "compare.png"),
        },
    }
    request.out.mkdir(parents=True, exist_ok=True)
    (request.out / "compare.json").write_text(json.dumps(document, indent=2) + "\n")
    (request.out / "compare.md").write_text(f"`{request.command}`\n\n" + comparison.markdown())
    plot(comparison, request.out / "compare.png")
    return comparison, document


def plot(comparison: Comparison, path: Path) -> None:
    """Each ratio as a bar, with the targets' bounds drawn on their bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in comparison.rows if row.ratio is not None]
    figure, axis = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.5))
    labels = [row.label for row in rows]
    colours = [{True: "tab:green", False: "tab:red", None: "tab:gray"}[row.met] for row in rows]
    axis.barh(labels, [row.ratio or 0 for row in rows], color=colours)
    for position, row in enumerate(rows):
        if row.target is not None:
            axis.plot([row.target[0]] * 2, [position - 0.4, position + 0.4], color="black")
    axis.axvline(1.0, color="gray", linestyle=":")
    axis.invert_yaxis()
    axis.set_xlabel("mkq / Kueue (median of pairs; black: target)")
    axis.set_title(f"{comparison.scenario}: mkq beside Kueue, {len(comparison.runs)} pair(s)")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
