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


def render(run_dirs: list[Path]) -> str:
    lines = [
        "# `mkq bench scheduler` results",
        "",
        f"Machine: {machine()}. Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        "",
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
