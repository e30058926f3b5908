"""Label and field selectors parse and match as kube-apiserver's do."""

from __future__ import annotations

import pytest

from kubesim.selectors import (
    fields_match,
    labels_match,
    parse_field_selector,
    parse_label_selector,
    selector_from_object,
)
from kueue_api.api_errors import ApiError

LABELS = {"app": "web", "tier": "front", "env": "prod"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app in (web, db)", True),
        ("app notin (web)", False),
        ("tier", True),
        ("!tier", False),
        ("missing!=x", True),
        ("app=web,env in (prod,stage),!missing", True),
        ("app=web,env=dev", False),
    ],
)
def test_label_selector_strings(selector: str, expected: bool) -> None:
    assert labels_match(parse_label_selector(selector), LABELS) is expected


def test_malformed_label_selector_is_a_bad_request() -> None:
    with pytest.raises(ApiError) as raised:
        parse_label_selector("app in web")
    assert raised.value.code == 400


def test_label_selector_objects() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod"]},
            {"key": "gpu", "operator": "DoesNotExist"},
        ],
    }
    assert labels_match(selector_from_object(selector), LABELS)
    assert not labels_match(
        selector_from_object(selector), {"app": "web", "env": "prod", "gpu": "1"}
    )


def test_field_selectors_on_pods() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running"},
    }
    assert fields_match(
        parse_field_selector("spec.nodeName=n1,status.phase!=Failed", "/pods", "Pod"), pod
    )
    assert not fields_match(parse_field_selector("metadata.namespace=other", "/pods", "Pod"), pod)
    assert fields_match(
        parse_field_selector("spec.nodeName=", "/pods", "Pod"), {"metadata": {"name": "q"}}
    )


def test_unsupported_field_is_rejected_naming_it() -> None:
    with pytest.raises(ApiError) as raised:
        parse_field_selector("spec.nodeName=n1", "/configmaps", "ConfigMap")
    assert raised.value.code == 400
    assert '"spec.nodeName"' in raised.value.message
