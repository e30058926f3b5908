"""A batch/v1 Job's partial admission (kueue.x-k8s.io/job-min-parallelism), case by case as
Kueue's own tests pin it (pkg/controller/jobs/job/job_controller_test.go TestPodSets and
TestPodSetsInfo, job_webhook_test.go TestValidateCreate and TestValidateUpdate)."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_api.jobs import BATCH_JOB, PodSetInfo
from kueue_api.jobs.checks import ManifestError
from kueue_api.jsoncopy import json_copy

MIN = "kueue.x-k8s.io/job-min-parallelism"
SYNC = "kueue.x-k8s.io/job-completions-equal-parallelism"


def make_job(
    *,
    parallelism: int = 1,
    completions: int | None = None,
    suspend: bool = True,
    indexed: bool = False,
    **annotations: str,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "parallelism": parallelism,
        "suspend": suspend,
        "template": {"metadata": {}, "spec": {"containers": [{"name": "c", "image": "pause"}]}},
    }
    if completions is not None:
        spec["completions"] = completions
    if indexed:
        spec["completionMode"] = "Indexed"
    names = {"min_parallelism": MIN, "sync": SYNC}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "job",
            "namespace": "ns",
            "annotations": {names[k]: v for k, v in annotations.items()},
        },
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("job", "count", "min_count"),
    [
        pytest.param(make_job(parallelism=3), 3, None, id="no partial admission"),
        pytest.param(make_job(parallelism=3, min_parallelism="2"), 3, 2, id="partial admission"),
        # Kueue reads an annotation that is not a number as none (minPodsCount).
        pytest.param(make_job(parallelism=3, min_parallelism="NaN"), 3, None, id="not a number"),
    ],
)
def test_the_pod_set_carries_the_minimum_count(
    job: dict[str, Any], count: int, min_count: int | None
) -> None:
    (pod_set,) = BATCH_JOB.pod_sets(job)
    assert pod_set["count"] == count
    assert pod_set.get("minCount") == min_count


def test_it_runs_with_the_admitted_count_and_is_restored_to_its_own() -> None:
    """TestPodSetsInfo "parallelism": run with 2 of 5, then restore and suspend: as before."""
    job = make_job(parallelism=5, min_parallelism="2")
    running = BATCH_JOB.run(job, [PodSetInfo("main", 2)])
    assert running["spec"]["parallelism"] == 2 and running["spec"]["suspend"] is False
    original = BATCH_JOB.pod_sets(job)
    stopped = BATCH_JOB.restore(BATCH_JOB.suspend(running), original)
    assert stopped["spec"] == job["spec"]


def test_completions_follow_parallelism_when_the_job_asks() -> None:
    job = make_job(parallelism=4, completions=4, indexed=True, min_parallelism="2", sync="true")
    running = BATCH_JOB.run(job, [PodSetInfo("main", 3)])
    assert (running["spec"]["parallelism"], running["spec"]["completions"]) == (3, 3)
    restored = BATCH_JOB.restore(BATCH_JOB.suspend(running), BATCH_JOB.pod_sets(job))
    assert (restored["spec"]["parallelism"], restored["spec"]["completions"]) == (4, 4)


def test_a_job_without_the_annotation_keeps_its_parallelism() -> None:
    job = make_job(parallelism=5)
    assert BATCH_JOB.run(job, [PodSetInfo("main", 2)])["spec"]["parallelism"] == 5


@pytest.mark.parametrize(
    ("job", "errors"),
    [
        pytest.param(
            make_job(parallelism=4, completions=6, min_parallelism="NaN"),
            [
                f"metadata.annotations[{MIN}]: Invalid value: "
                '"NaN": strconv.Atoi: parsing "NaN": invalid syntax'
            ],
            id="invalid partial admission annotation (format)",
        ),
        pytest.param(
            make_job(parallelism=4, completions=6, min_parallelism="5"),
            [f"metadata.annotations[{MIN}]: Invalid value: 5: should be between 0 and 3"],
            id="invalid partial admission annotation (badValue)",
        ),
        pytest.param(
            make_job(parallelism=4, completions=6, min_parallelism="3"),
            [],
            id="valid partial admission annotation",
        ),
        pytest.param(
            make_job(parallelism=4, completions=6, indexed=True, sync="-"),
            [
                f'metadata.annotations[{SYNC}]: Invalid value: "-": strconv.ParseBool: '
                'parsing "-": invalid syntax'
            ],
            id="invalid sync completions annotation (format)",
        ),
        pytest.param(
            make_job(parallelism=4, completions=6, indexed=True, sync="true"),
            [
                "spec.completions: Invalid value: 6: should be equal to parallelism when "
                f"{SYNC} annotation is true"
            ],
            id="valid sync completions annotation, wrong completions count",
        ),
        pytest.param(
            make_job(parallelism=4, completions=4, sync="true"),
            [
                f'metadata.annotations[{SYNC}]: Invalid value: "true": should not be enabled '
                "for NonIndexed jobs"
            ],
            id="valid sync completions annotation, wrong job completions type (default)",
        ),
        pytest.param(
            make_job(parallelism=4, completions=4, indexed=True, sync="true"),
            [],
            id="valid sync completions annotation",
        ),
    ],
)
def test_create_is_validated_as_kueues_webhook_does(job: dict[str, Any], errors: list[str]) -> None:
    assert [str(e) for e in BATCH_JOB.admission_problems(job, None)] == errors


def changed(job: dict[str, Any], **spec: Any) -> dict[str, Any]:
    new = json_copy(job)
    new["spec"].update(spec)
    return new


@pytest.mark.parametrize(
    ("old", "new", "errors"),
    [
        pytest.param(
            make_job(parallelism=4, completions=6, suspend=False, min_parallelism="3"),
            make_job(parallelism=5, completions=6, suspend=False, min_parallelism="3"),
            [
                "spec.parallelism: Forbidden: cannot change when partial admission is "
                "enabled and the job is not suspended"
            ],
            id="immutable parallelism while unsuspended with partial admission enabled",
        ),
        pytest.param(
            make_job(parallelism=4, completions=6, min_parallelism="3"),
            make_job(parallelism=5, completions=6, min_parallelism="3"),
            [],
            id="mutable parallelism while suspended with partial admission enabled",
        ),
        pytest.param(
            make_job(parallelism=4, completions=6, suspend=False, sync="true"),
            make_job(parallelism=5, completions=6, suspend=False, sync="false"),
            [
                f"metadata.annotations[{SYNC}]: Forbidden: field is immutable while the job "
                "is not suspended"
            ],
            id="immutable sync completion annotation while unsuspended",
        ),
        pytest.param(
            make_job(parallelism=4, completions=6, suspend=True, sync="true"),
            make_job(parallelism=5, completions=6, suspend=False, sync="false"),
            [],
            id="mutable sync completion annotation while suspended",
        ),
        pytest.param(
            make_job(parallelism=4, completions=6, min_parallelism="3"),
            make_job(parallelism=4, completions=6, min_parallelism="2"),
            [],
            id="can update the kueue.x-k8s.io/job-min-parallelism annotation",
        ),
        pytest.param(
            make_job(parallelism=4, completions=6, min_parallelism="3"),
            make_job(parallelism=4, completions=6, min_parallelism="NaN"),
            [
                f"metadata.annotations[{MIN}]: Invalid value: "
                '"NaN": strconv.Atoi: parsing "NaN": invalid syntax'
            ],
            id="validates kueue.x-k8s.io/job-min-parallelism annotation value (bad format)",
        ),
    ],
)
def test_update_is_validated_as_kueues_webhook_does(
    old: dict[str, Any], new: dict[str, Any], errors: list[str]
) -> None:
    assert [str(e) for e in BATCH_JOB.admission_problems(new, old)] == errors


def test_the_agents_own_start_and_stop_pass_the_update_rules() -> None:
    """Unsuspending with the admitted count, then suspending, then restoring: each write is
    one the webhook lets through, in the order the agent makes them."""
    job = make_job(parallelism=5, min_parallelism="2")
    running = BATCH_JOB.run(job, [PodSetInfo("main", 2)])
    stopped = BATCH_JOB.suspend(running)
    restored = BATCH_JOB.restore(stopped, BATCH_JOB.pod_sets(job))
    for old, new in ((job, running), (running, stopped), (stopped, restored)):
        assert BATCH_JOB.admission_problems(new, old) == []


def test_the_manager_refuses_a_bad_minimum_naming_the_annotation() -> None:
    with pytest.raises(ManifestError) as raised:
        BATCH_JOB.check(make_job(parallelism=4, min_parallelism="4"))
    assert raised.value.field == f"metadata.annotations[{MIN}]"
