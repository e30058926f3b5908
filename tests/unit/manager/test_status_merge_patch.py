"""The merge patch that mirrors a worker Job's status onto the manager cluster's Job
(manager.sources.manager_cluster.merge_patch_to): applied to the status there, it leaves
exactly the worker's. Found by `mkq bench compare --dispatch`: a Job that finished while its
mirrored `uncountedTerminatedPods` still listed a pod kept that list under a patch of `{}`, and
kube-apiserver refused every later patch ("must be empty for finished job")."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.patches import merge_patch
from manager.sources.manager_cluster import merge_patch_to

RUNNING = {
    "active": 1,
    "startTime": "2026-12-06T22:59:08Z",
    "uncountedTerminatedPods": {"succeeded": ["365bd9ef"]},
    "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}],
}
FINISHED = {
    "startTime": "2026-12-06T22:59:08Z",
    "completionTime": "2026-12-06T22:59:11Z",
    "succeeded": 1,
    "uncountedTerminatedPods": {},
    "conditions": [
        {"type": "SuccessCriteriaMet", "status": "True"},
        {"type": "Complete", "status": "True"},
    ],
}


@pytest.mark.parametrize(
    ("current", "desired"),
    [
        (RUNNING, FINISHED),
        ({}, FINISHED),
        (FINISHED, FINISHED),
        ({"a": {"b": {"c": 1, "d": 2}}}, {"a": {"b": {"c": 3}}}),
        ({"a": {"b": 1}}, {"a": [1, 2]}),
        ({"a": [1, 2]}, {"a": {"b": 1}}),
    ],
)
def test_the_patch_turns_the_managers_status_into_the_workers(
    current: dict[str, Any], desired: dict[str, Any]
) -> None:
    assert merge_patch(current, merge_patch_to(current, desired)) == desired


def test_an_emptied_object_names_each_key_it_drops() -> None:
    patch = merge_patch_to(RUNNING, FINISHED)
    assert patch["uncountedTerminatedPods"] == {"succeeded": None}
    assert patch["active"] is None
