"""Recovery times the fault tests measured, printed as one table at the end of the session
(tests/e2e/conftest.py's pytest_terminal_summary) and written to MKQ_FAULT_REPORT if set."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Measurement:
    backend: str
    fault: str
    figures: dict[str, float] = field(default_factory=dict)


MEASUREMENTS: list[Measurement] = []


def record(backend: str, fault: str, **figures: float) -> None:
    MEASUREMENTS.append(Measurement(backend, fault, dict(figures)))


def _figure(key: str, value: float) -> str:
    name = key.replace("_", " ")
    return f"{name} {value:.1f} s" if isinstance(value, float) else f"{name} {value}"


def lines() -> list[str]:
    """One line per measurement: backend, fault, then each figure (seconds, or a count)."""
    out = []
    for m in MEASUREMENTS:
        shown = ", ".join(
            f"{key.replace('_', ' ')} {value:.1f} s"
            if isinstance(value, float)
            else f"{key} {value}"
            for key, value in m.figures.items()
        )
        out.append(f"[{m.backend}] {m.fault}: {shown}")
    return out


def write(path: Path) -> None:
    path.write_text(json.dumps([m.__dict__ for m in MEASUREMENTS], indent=2))


def write_if_asked() -> None:
    target = os.environ.get("MKQ_FAULT_REPORT")
    if target and MEASUREMENTS:
        write(Path(target))
