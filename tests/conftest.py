"""Session-wide fixtures: the real control planes some suites share (tests/realk8s.py)."""

from __future__ import annotations

import pytest

from tests.realk8s import stop_all


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stop_all()
