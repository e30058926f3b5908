"""The DRA scenarios' pending messages, as `mkq simulate` reports them: each scenario's
Expectation may carry `messages` (workload -> the message Kueue writes, or a part of it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mkq.commands.simulate import simulate_paths

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _with_messages() -> list[Any]:
    params = []
    for path in sorted(SCENARIOS.glob("dra-*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        expectation = next(d for d in docs if d.get("kind") == "Expectation")
        if expectation.get("messages"):
            params.append(pytest.param(path, expectation["messages"], id=path.name))
    return params


@pytest.mark.parametrize(("path", "messages"), _with_messages())
def test_pending_message(path: Path, messages: dict[str, str], tmp_path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") != "Expectation"]
    source = tmp_path / "input.yaml"
    source.write_text(yaml.safe_dump_all(docs))
    report = simulate_paths([source])["workloads"]
    for key, want in messages.items():
        got = report[key]
        assert not got["admitted"], key
        assert want in got["message"], f"{key}: {got['message']}"
