"""events.k8s.io/v1 <-> core/v1 Event conversion, as kube-apiserver encodes each side."""

from __future__ import annotations

import pytest

from kubesim.event_versions import core_field_selector, to_core, to_events_v1
from kueue_api.api_errors import ApiError


def test_a_minimal_core_event_reads_as_kube_encodes_it_through_events_k8s_io() -> None:
    core = {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": "a"},
        "involvedObject": {"kind": "ConfigMap", "name": "cm"},
        "reason": "R",
        "message": "m",
    }
    assert to_events_v1(core) == {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": {"name": "a"},
        "eventTime": None,
        "reason": "R",
        "regarding": {"kind": "ConfigMap", "name": "cm"},
        "note": "m",
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }


def test_an_events_k8s_io_event_is_stored_with_the_core_names() -> None:
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "b"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "series": {"count": 3, "lastObservedTime": "2026-01-01T00:00:01.000000Z"},
        "reportingController": "x/y",
        "reportingInstance": "i",
        "action": "A",
        "reason": "R",
        "regarding": {"kind": "ConfigMap", "name": "cm"},
        "note": "n",
        "type": "Normal",
        "deprecatedCount": 2,
    }
    core = to_core(event)
    assert core["apiVersion"] == "v1" and core["message"] == "n" and core["count"] == 2
    assert core["involvedObject"] == {"kind": "ConfigMap", "name": "cm"}
    assert core["reportingComponent"] == "x/y" and core["reportingInstance"] == "i"
    back = to_events_v1(core)
    assert {k: v for k, v in back.items() if k in event} == event


def test_field_labels_are_converted_and_core_only_ones_refused() -> None:
    assert core_field_selector("regarding.name=cm,reportingController!=x") == (
        "involvedObject.name=cm,reportingComponent!=x"
    )
    with pytest.raises(ApiError) as refused:
        core_field_selector("involvedObject.name=cm")
    assert refused.value.message == "field label not supported: involvedObject.name"
