"""Kubernetes names are checked whole: `$` in a Python pattern also matches before a final
newline, which a name must not end with."""

from __future__ import annotations

import pytest

from kueue_api.jobs.checks import ManifestError
from kueue_api.validation import is_label_value, is_qualified_name
from manager.jobs import parse_job
from tests.integration.manager.test_api_input import job


@pytest.mark.parametrize("check", [is_label_value, is_qualified_name])
def test_a_trailing_newline_is_not_part_of_a_valid_name(check: object) -> None:
    assert check("abc") == []  # type: ignore[operator]
    assert check("abc\n") != []  # type: ignore[operator]


def test_a_job_named_with_a_trailing_newline_is_refused() -> None:
    manifest = job("abc\n")
    with pytest.raises(ManifestError) as refused:
        parse_job(manifest)
    assert "metadata.name" in str(refused.value)
