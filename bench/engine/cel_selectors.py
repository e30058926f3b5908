"""Time per DRA selector evaluation on one device: the CEL library (kueue_api.cel.dra on
kueue_api.cel) against the hand-written subset evaluator it replaced.

The old evaluator is read from the commit that last had it (`--old-rev`, default 64c7740) with
`git show`, and loaded as a module of its own, so both run in one process on the same devices.
Each selector is evaluated on every device of 1,000 (varied attributes and capacities); a
figure is the median over 5 rounds of the time per (selector, device) evaluation. Selectors the
old evaluator refuses (macros, arithmetic, semver) are timed for the library only. A device's
CEL value is built once and shared by every selector, as the engine does; that build is timed
on its own.

    .venv/bin/python -m bench.engine.cel_selectors [--old-rev REV] [--devices N]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import kueue_api as api
from kueue_api.cel import dra as new_cel

ROOT = Path(__file__).resolve().parents[2]
SELECTORS = {
    "driver": "device.driver == 'gpu.example.com'",
    "attribute": "device.attributes['gpu.example.com'].model == 'a100'",
    "quantity": ("device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"),
    "combined": (
        "device.driver == 'gpu.example.com' && "
        "device.attributes['gpu.example.com'].model == 'a100' && "
        "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('32Gi'))"
    ),
    "macro": "['a100', 'h100'].exists(m, m == device.attributes['gpu.example.com'].model)",
    "semver": "device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('1.0.0'))",
}
ROUNDS = 5


def _old_module(rev: str) -> ModuleType:
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:worker_agent/engine/cel.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    spec = importlib.util.spec_from_loader("old_engine_cel", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    exec(compile(source, f"{rev}:worker_agent/engine/cel.py", "exec"), module.__dict__)
    return module


def _devices(count: int) -> list[api.Device]:
    models = ("a100", "h100", "t4", "l4")
    return [
        api.Device.model_validate(
            {
                "name": f"gpu-{i}",
                "attributes": {
                    "model": {"string": models[i % len(models)]},
                    "index": {"int": i % 8},
                    "driverVersion": {"version": f"1.{i % 3}.0"},
                },
                "capacity": {"memory": {"value": f"{16 * (1 + i % 6)}Gi"}},
            }
        )
        for i in range(count)
    ]


def _median_us(run: Callable[[], Any], evaluations: int) -> float:
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        run()
        rounds.append((time.perf_counter() - start) / evaluations * 1e6)
    return statistics.median(rounds)


def _time(module: ModuleType, expression: str, views: list[Any]) -> float | None:
    try:
        selector = module.compile_selector(expression)
    except module.CELCompileError:
        return None

    def run() -> None:
        for view in views:
            selector.matches(view)

    run()  # warm: compile caches, and the devices' CEL values
    return _median_us(run, len(views))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-rev", default="64c7740")
    parser.add_argument("--devices", type=int, default=1_000)
    args = parser.parse_args()
    old = _old_module(args.old_rev)
    devices = _devices(args.devices)
    old_views = [old.cel_device("gpu.example.com", d) for d in devices]
    new_views = [new_cel.cel_device("gpu.example.com", d) for d in devices]

    def build() -> None:
        for device in devices:
            new_cel.cel_device("gpu.example.com", device).bound()

    build_us = _median_us(build, len(devices))
    print(f"{'selector':<10} {'old µs':>8} {'library µs':>11}")
    for name, expression in SELECTORS.items():
        before = _time(old, expression, old_views)
        after = _time(new_cel, expression, new_views)
        shown = "refused" if before is None else f"{before:.1f}"
        print(f"{name:<10} {shown:>8} {after:>11.1f}")
    print(f"device CEL value, built once per device view: {build_us:.1f} µs")


if __name__ == "__main__":
    main()
