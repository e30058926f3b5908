"""CronJob (batch/v1) as kube-apiserver checks it (k8s.io/kubernetes
pkg/apis/batch/validation: ValidateCronJobCreate, robfig/cron's standard schedule parser), with
its Job template checked as the Jobs it makes are (Kueue's Job webhook)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kueue_api.cron import schedule_problem
from kueue_api.loader import ValidationFailure, parse_object, parse_object_with_warnings
from kueue_api.models import CronJob

SAMPLE: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "sample-cronjob", "namespace": "default"},
    "spec": {
        "schedule": "* * * * *",
        "jobTemplate": {
            "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
            "spec": {
                "parallelism": 3,
                "completions": 3,
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                        ],
                        "restartPolicy": "Never",
                    }
                },
            },
        },
    },
}


def _with(**spec: Any) -> dict[str, Any]:
    document = copy.deepcopy(SAMPLE)
    document["spec"].update(spec)
    return document


def _errors(document: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationFailure) as failure:
        parse_object(document)
    return [str(error) for error in failure.value.errors]


@pytest.mark.parametrize(
    "schedule",
    [
        "* * * * *",
        "*/5 * * * *",
        "0 9-17/2 * * MON-FRI",
        "15,45 0 1 JAN,jul ?",
        "0 0 29 2 sun",
        "@hourly",
        "@midnight",
        "@every 1h30m",
        "CRON_TZ=Europe/Paris 0 6 * * *",
    ],
)
def test_schedules_robfig_cron_parses_are_taken(schedule: str) -> None:
    assert schedule_problem(schedule) is None


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        ("", "empty spec string"),
        ("* * * *", "expected exactly 5 fields, found 4: * * * *"),
        ("0 0 * * * *", "expected exactly 5 fields, found 6"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("* 5-2 * * *", "beginning of range (5) beyond end of range (2): 5-2"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("* * * FOO *", "failed to parse int from FOO in the month field: FOO"),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
        ("@every soon", "failed to parse duration @every soon"),
    ],
)
def test_schedules_it_refuses_say_why(schedule: str, problem: str) -> None:
    found = schedule_problem(schedule)
    assert found is not None and problem in found


def test_kueues_sample_cronjob_loads_with_kubernetes_defaults() -> None:
    cron_job = parse_object(SAMPLE)
    assert isinstance(cron_job, CronJob)
    assert cron_job.spec.concurrency_policy == "Allow"
    assert cron_job.spec.successful_jobs_history_limit == 3
    assert cron_job.spec.failed_jobs_history_limit == 1
    # The Job template gets the Job defaults the Jobs it makes will get.
    assert cron_job.spec.job_template.spec.suspend is False
    assert cron_job.spec.job_template.spec.backoff_limit == 6


def test_a_bad_schedule_names_the_field() -> None:
    assert _errors(_with(schedule="61 * * * *")) == [
        'spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61'
    ]


def test_the_job_template_is_checked_as_a_job() -> None:
    document = copy.deepcopy(SAMPLE)
    template = document["spec"]["jobTemplate"]
    template["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    template["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "not a label value"
    errors = _errors(document)
    assert any(e.startswith("spec.jobTemplate.spec.template.spec.restartPolicy: ") for e in errors)
    label = "spec.jobTemplate.metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "
    assert any(e.startswith(label) for e in errors), errors


def test_a_name_longer_than_52_characters_leaves_no_room_for_its_jobs_names() -> None:
    document = copy.deepcopy(SAMPLE)
    document["metadata"]["name"] = "c" * 53
    assert _errors(document) == [
        f'metadata.name: Invalid value: "{"c" * 53}": must be no more than 52 characters'
    ]
    document["metadata"]["name"] = "c" * 52
    assert isinstance(parse_object(document), CronJob)


def test_a_time_zone_in_the_schedule_and_in_the_field_is_refused_and_alone_warned() -> None:
    both = _with(schedule="TZ=UTC 0 0 * * *", timeZone="Etc/UTC")
    assert _errors(both) == [
        'spec.schedule: Invalid value: "TZ=UTC 0 0 * * *": cannot use both timeZone field '
        "and TZ or CRON_TZ in schedule"
    ]
    _, warnings = parse_object_with_warnings(_with(schedule="TZ=UTC 0 0 * * *"))
    assert [str(w) for w in warnings] == [
        "spec.schedule: cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    ]


def test_an_unknown_concurrency_policy_is_refused() -> None:
    (error,) = _errors(_with(concurrencyPolicy="Sometimes"))
    assert error.startswith("spec.concurrencyPolicy: ")
