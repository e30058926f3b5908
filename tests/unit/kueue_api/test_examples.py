"""Kueue's own example manifests load, and survive load -> dump -> load unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kueue_api.loader import load_documents, parse_object

SHARED = Path("/work/shared")
EXAMPLE_FILES = sorted((SHARED / "kueue-examples").rglob("*.yaml"))
SCENARIO_FILES = sorted((SHARED / "scenarios").glob("*.yaml"))
ALL_FILES = EXAMPLE_FILES + SCENARIO_FILES


def _ids(paths: list[Path]) -> list[str]:
    return [str(path.relative_to(SHARED)) for path in paths]


def test_the_example_corpus_is_present() -> None:
    assert len(EXAMPLE_FILES) > 50


@pytest.mark.parametrize("path", ALL_FILES, ids=_ids(ALL_FILES))
def test_every_document_of_a_supported_kind_loads(path: Path) -> None:
    result = load_documents([path])
    real_errors = [str(error) for error in result.errors if not error.unsupported]
    assert real_errors == []


@pytest.mark.parametrize("path", ALL_FILES, ids=_ids(ALL_FILES))
def test_round_trip_gives_the_same_object(path: Path) -> None:
    for loaded in load_documents([path]).objects:
        dumped = loaded.obj.model_dump(by_alias=True, exclude_none=True)
        # The dump is plain Kubernetes JSON...
        again = parse_object(json.loads(json.dumps(dumped)))
        # ...that loads back to an equal object, and dumps to the same JSON.
        assert again == loaded.obj
        assert again.model_dump(by_alias=True, exclude_none=True) == dumped


def test_examples_cover_every_kind_we_expect_users_to_write() -> None:
    kinds = {
        getattr(loaded.obj, "kind", "")
        for loaded in load_documents(EXAMPLE_FILES + SCENARIO_FILES).objects
    }
    assert {
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "Workload",
        "Topology",
        "AdmissionCheck",
        "MultiKueueConfig",
        "MultiKueueCluster",
        "ProvisioningRequestConfig",
        "Job",
        "Pod",
        "Node",
        "Namespace",
        "Configuration",
        "DeviceClass",
        "ResourceClaimTemplate",
    } <= kinds


def test_unknown_fields_of_core_objects_are_kept() -> None:
    job_file = SHARED / "kueue-examples" / "jobs" / "sample-job.yaml"
    (job,) = [loaded.obj for loaded in load_documents([job_file]).objects]
    container = job.model_dump(by_alias=True, exclude_none=True)["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert "image" in container
    assert "args" in container
