"""Where two reports of `mkq simulate`'s shape decide differently.

Only decisions count, as the issue defines agreement: which Workloads hold quota and are
admitted, in which ClusterQueue, each podSet's flavors, count and topology domains, and who
was preempted by whom. Messages, reasons and resourceUsage strings are left out (the same
decision can be worded or formatted differently).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.peers.kueue.oracle import scenario_documents

Report = dict[str, Any]


def decisions(report: Report) -> dict[str, Any]:
    """The decision part of each Workload of a report."""
    out: dict[str, Any] = {}
    for key, workload in report.get("workloads", {}).items():
        if workload.get("finished"):
            continue
        pod_sets = {
            name: {
                "flavors": pod_set.get("flavors", {}),
                "count": pod_set.get("count"),
                **(
                    {"topology": pod_set["topologyAssignment"]}
                    if pod_set.get("topologyAssignment")
                    else {}
                ),
            }
            for name, pod_set in (workload.get("podSets") or {}).items()
        }
        out[key] = {
            "admitted": bool(workload.get("admitted")),
            "quotaReserved": bool(workload.get("quotaReserved")),
            "clusterQueue": workload.get("clusterQueue"),
            "podSets": pod_sets,
            # Kueue's conditions keep only the last eviction.
            "preemptedBy": [
                e.get("by", "")
                for e in workload.get("evictions") or []
                if e.get("reason") == "Preempted"
            ][-1:],
        }
    return out


def _flat(value: Any, prefix: str) -> dict[str, str]:
    if isinstance(value, dict) and value:
        flat: dict[str, str] = {}
        for key, inner in value.items():
            flat.update(_flat(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: json.dumps(value, sort_keys=True)}


def differences(ours: Report, kueue: Report) -> list[str]:
    """One line per decision that differs: `path: mkq=... kueue=...`."""
    a, b = _flat(decisions(ours), ""), _flat(decisions(kueue), "")
    return [
        f"{path}: mkq={a.get(path, '-')} kueue={b.get(path, '-')}"
        for path in sorted(set(a) | set(b))
        if a.get(path) != b.get(path)
    ]


@dataclass(frozen=True)
class Outcome:
    scenario: Path
    differences: list[str]
    error: str | None = None

    @property
    def agrees(self) -> bool:
        return self.error is None and not self.differences


def without_expectation(path: Path, directory: Path) -> Path:
    """The scenario without its test's `Expectation` document, as a file `mkq simulate` reads."""
    target = directory / path.name
    target.write_text(yaml.safe_dump_all(scenario_documents(path), sort_keys=False))
    return target


def compare(
    scenarios: list[Path],
    ours: Callable[[Path], Report],
    kueue: Callable[[Path], Report],
) -> Iterator[Outcome]:
    """Each scenario decided by both; an error of either side is an outcome too."""
    with tempfile.TemporaryDirectory(prefix="mkq-agree-") as scratch:
        for scenario in scenarios:
            try:
                clean = without_expectation(scenario, Path(scratch))
                mine = ours(clean)
                theirs = kueue(clean)
            except Exception as error:  # one broken scenario must not end the run
                yield Outcome(scenario, [], f"{type(error).__name__}: {error}")
                continue
            yield Outcome(scenario, differences(mine, theirs))
