"""Collect the tables of several runs into one Markdown page (bench/scheduler/RESULTS.md).

    python -m bench.scheduler.results bench-out/scheduler-baseline bench-out/scheduler-tas ...

Each run directory holds the table.md and summary.json `mkq bench scheduler` wrote; the page
adds the machine the runs were made on, so a figure is never read without its context.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path


def machine() -> str:
    model = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} cores (shared with other work), "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}"
    )


HOW_TO_READ = """\
How to read these figures:

- Same input and same metrics as Kueue's scheduler performance test
  (test/performance/scheduler): the generator and rangespec files of `../shared/kueue-perf/`,
  the recorder's definitions (`bench/scheduler/metrics.py`). Kueue's column is its published
  CI mean (envtest API server, minimalkueue, many cores).
- Engine mode runs the engine on a simulated clock: creation, runtimes and finishes are in
  simulated time and no simulated time passes while the engine thinks, so wall time and
  admission times measure scheduling *quality*; the engine's *cost* is the CPU line (CPU
  seconds per admission, and per simulated second: below 1 means one core keeps up in real
  time). Kueue's figures include its API round trips, so engine mode is not a like-for-like
  speed race; cluster mode is (kubesim + the agent process, wall clock).
- Cluster mode: wallMs is the agent process's lifetime up to the end of the run (Kueue
  measures minimalkueue's the same way); creation starts once the agent is ready. Creation and
  admission timestamps have Kubernetes' one-second resolution, as in Kueue's runs.
- The floor is a lower bound for any scheduler (`bench/scheduler/floor.py`): wall time from
  work over quota capacity per cohort and creation + runtime; a class's admission floor is the
  class alone on its cohort's quota (0 when it fits on arrival); the all-workloads admission
  floor is a fluid-backlog bound. mkq / floor = 1.0 would be perfect.
"""


def render(run_dirs: list[Path]) -> str:
    lines = [
        "# `mkq bench scheduler` results",
        "",
        f"Machine: {machine()}. Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        "",
        HOW_TO_READ,
    ]
    for run_dir in run_dirs:
        summary = json.loads((run_dir / "summary.json").read_text())
        lines.append((run_dir / "table.md").read_text().rstrip())
        lines.append("")
        lines.append(f"Plot: `{summary['files']['plot']}`.")
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> None:
    sys.stdout.write(render([Path(arg) for arg in sys.argv[1:]]))


if __name__ == "__main__":
    main()
