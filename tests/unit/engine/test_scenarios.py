"""Every scenario file (shared examples and ours) run through `mkq simulate`, checked against
its Expectation document.

Besides the shared Expectation fields: `reserved` lists workloads holding quota that are not
admitted (an admission check is not Ready), in the form of `admitted`; entries of either may
give `admissionChecks` (check name -> state); `messages` maps workloads to the message they
must show (or a part of it).

Scenarios of areas the engine does not implement yet are expected to fail (strictly), named by
the issue that brings them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kueue_api.quantity import Quantity
from mkq.commands.simulate import simulate

ROOT = Path(__file__).resolve().parents[3]
SCENARIO_DIRS = [ROOT.parent / "shared" / "scenarios", ROOT / "tests" / "scenarios"]

NOT_YET: dict[str, str] = {}


def _scenarios() -> list[Any]:
    params = []
    for directory in SCENARIO_DIRS:
        for path in sorted(directory.glob("*.yaml")):
            marks = [
                pytest.mark.xfail(strict=True, reason=reason)
                for prefix, reason in NOT_YET.items()
                if path.name.startswith(prefix)
            ]
            params.append(pytest.param(path, id=f"{directory.name}/{path.name}", marks=marks))
    return params


def _split(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    expectations = [d for d in documents if d.get("kind") == "Expectation"]
    assert len(expectations) == 1, f"{path.name}: needs exactly one Expectation document"
    return [d for d in documents if d.get("kind") != "Expectation"], expectations[0]


def _run(objects: list[dict[str, Any]], tmp_path: Path) -> dict[str, Any]:
    source = tmp_path / "input.yaml"
    source.write_text(yaml.safe_dump_all(objects))
    result = CliRunner().invoke(simulate, [str(source), "-o", "json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output)
    return report


def _same_quantity(a: Any, b: Any) -> bool:
    return Quantity.parse(str(a)) == Quantity.parse(str(b))


def _level_value(
    values: list[str], levels: list[str], level: str, nodes: dict[str, dict[str, str]]
) -> str:
    """The domain at `level` holding a leaf domain (through the node's labels when the
    assignment names only hostnames)."""
    if level in levels:
        return "/".join(values[: levels.index(level) + 1])
    labels = nodes.get(values[-1], {})
    assert level in labels, f"node {values[-1]} has no label {level}"
    return labels[level]


def _check_constraints(
    name: str,
    constraints: list[dict[str, Any]],
    got: dict[str, Any] | None,
    nodes: dict[str, dict[str, str]],
) -> None:
    assert got is not None, f"{name}: expected a topology assignment"
    known = {"level", "sameDomain", "maxDomains", "domainCounts", "countsPerDomain", "multipleOf"}
    for constraint in constraints:
        unknown = set(constraint) - known
        assert not unknown, f"{name}: unknown topologyConstraints keys {sorted(unknown)}"
        per_domain: dict[str, int] = {}
        for domain in got["domains"]:
            key = _level_value(domain["values"], got["levels"], constraint["level"], nodes)
            per_domain[key] = per_domain.get(key, 0) + domain["count"]
        if constraint.get("sameDomain"):
            assert len(per_domain) == 1, f"{name}: pods span {sorted(per_domain)}"
        if "maxDomains" in constraint:
            assert len(per_domain) <= constraint["maxDomains"], f"{name}: {per_domain}"
        if "domainCounts" in constraint:
            assert sorted(per_domain.values()) == sorted(constraint["domainCounts"]), name
        if "countsPerDomain" in constraint:
            assert per_domain == dict(constraint["countsPerDomain"]), name
        if "multipleOf" in constraint:
            step = constraint["multipleOf"]
            assert all(count % step == 0 for count in per_domain.values()), f"{name}: {per_domain}"


def _check_topology(name: str, want: dict[str, Any], got: dict[str, Any] | None) -> None:
    assert got is not None, f"{name}: expected a topology assignment"
    levels = list(want["levels"])
    assert got["levels"] == levels, f"{name}: topology levels"
    want_domains = sorted((tuple(d["values"]), d["count"]) for d in want["domains"])
    got_domains = sorted((tuple(d["values"]), d["count"]) for d in got["domains"])
    assert got_domains == want_domains, f"{name}: topology domains"


@pytest.mark.parametrize("path", _scenarios())
def test_scenario(path: Path, tmp_path: Path) -> None:
    objects, expect = _split(path)
    nodes = {
        o["metadata"]["name"]: o["metadata"].get("labels") or {}
        for o in objects
        if o.get("kind") == "Node"
    }
    report = _run(objects, tmp_path)["workloads"]
    admitted = {key for key, wl in report.items() if wl["admitted"]}
    expected_admitted = expect.get("admitted") or {}
    assert admitted == set(expected_admitted), {
        key: report[key].get("message") for key in set(expected_admitted) - admitted
    }
    reserved = {k for k, wl in report.items() if wl.get("quotaReserved") and not wl["admitted"]}
    expected_reserved = expect.get("reserved") or {}
    assert reserved == set(expected_reserved), {
        key: report[key].get("message") for key in set(expected_reserved) ^ reserved
    }
    for key, message in (expect.get("messages") or {}).items():
        assert message in (report[key].get("message") or ""), key
    for key, want in {**expected_admitted, **expected_reserved}.items():
        got = report[key]
        assert got["clusterQueue"] == want["clusterQueue"], key
        if "admissionChecks" in want:
            states = {name: c["state"] for name, c in (got.get("admissionChecks") or {}).items()}
            assert states == want["admissionChecks"], key
        for ps_name, ps_want in (want.get("podSets") or {}).items():
            ps_got = got["podSets"][ps_name]
            label = f"{key} podSet {ps_name}"
            if "flavors" in ps_want:
                assert ps_got["flavors"] == ps_want["flavors"], label
            if "count" in ps_want:
                assert ps_got["count"] == ps_want["count"], label
            for res, qty in (ps_want.get("resourceUsage") or {}).items():
                assert _same_quantity(ps_got["resourceUsage"][res], qty), label
            if ps_want.get("topology") is not None:
                _check_topology(label, ps_want["topology"], ps_got.get("topologyAssignment"))
            if ps_want.get("topologyConstraints"):
                _check_constraints(
                    label, ps_want["topologyConstraints"], ps_got.get("topologyAssignment"), nodes
                )
    for key in expect.get("pending") or []:
        assert key in report, f"{key}: unknown workload"
        assert not report[key]["admitted"], f"{key} should stay pending"
    for key in expect.get("preempted") or []:
        assert report[key]["evictions"], f"{key} should have been preempted"
