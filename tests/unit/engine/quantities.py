"""Quantities of Kueue's Go test tables ("500m", "2Gi", "3") in the engine's units."""

from __future__ import annotations

from kueue_api.quantity import Quantity
from worker_agent.engine.build import amount


def kueue_amount(resource: str, text: str) -> int:
    return amount(resource, Quantity.parse(text))
