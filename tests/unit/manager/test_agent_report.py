"""The agent report's capacity entries: quantities as the agent sends them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from manager.agent_report import ReportedCapacity


def _entry(**amounts: object) -> dict[str, object]:
    return {"clusterQueue": "team-a", "flavor": "default", "resource": "memory", **amounts}


def test_pending_is_a_quantity_like_nominal_and_usage() -> None:
    entry = ReportedCapacity.model_validate(_entry(nominal="32Gi", usage="1500Mi", pending="600Mi"))
    assert (entry.nominal, entry.usage, entry.pending) == ("32Gi", "1500Mi", "600Mi")


def test_bare_numbers_become_canonical_quantities() -> None:
    entry = ReportedCapacity.model_validate(_entry(nominal=8, usage="0.5", pending=2))
    assert (entry.nominal, entry.usage, entry.pending) == ("8", "500m", "2")


@pytest.mark.parametrize("field", ["nominal", "usage", "pending"])
def test_a_malformed_amount_is_rejected_naming_its_field(field: str) -> None:
    amounts: dict[str, object] = {"nominal": "1", "usage": "1", field: "lots"}
    with pytest.raises(ValidationError) as error:
        ReportedCapacity.model_validate(_entry(**amounts))
    assert error.value.errors()[0]["loc"] == (field,)
