"""Workload names follow Kueue's scheme, so the same Job gets the same Workload name."""

import pytest

from kueue_api.workload_names import workload_name_for_owner


def test_matches_kueue_for_a_batch_job() -> None:
    assert workload_name_for_owner("name", "uid", "Job", "batch") == "job-name-ef3a1"


def test_long_names_are_truncated_to_253_characters() -> None:
    owner = "x" * 400
    name = workload_name_for_owner(owner, "uid", "Job", "batch")
    assert len(name) == 253
    assert name.startswith("job-xxx")


LONG_OWNER = (
    "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-"
    "department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-"
    "engineering-team-lead-senior-architect-validation-checked-approved-by-legal-and-ops-dept"
)


@pytest.mark.parametrize(
    ("owner", "extra", "want"),
    [
        # Kueue's TestGenerateWorkloadNameWithExtra (pkg/controller/jobframework/
        # workload_names_test.go), under its default ShortWorkloadNames=false.
        ("name", "", "job-name-ef3a1"),
        ("name", "1", "job-name-2514c"),
        (
            LONG_OWNER,
            "",
            "job-marketing-campaign-autumn-2024-region-north-america-department-digital-"
            "strategy-sub-department-social-media-engagement-tracker-and-analytics-dashboard-v2-"
            "final-revision-by-engineering-team-lead-senior-architect-validation-checked-"
            "approved-by-l-218b8",
        ),
    ],
)
def test_names_equal_kueues_own_table(owner: str, extra: str, want: str) -> None:
    assert workload_name_for_owner(owner, "uid", "Job", "batch", extra=extra) == want


def test_the_kind_and_group_are_part_of_the_hash() -> None:
    """A JobSet and a Job of one name and uid get different Workloads (the manager's and the
    agent's names both come from here, through each kind's resource)."""
    job = workload_name_for_owner("train", "uid", "Job", "batch")
    jobset = workload_name_for_owner("train", "uid", "JobSet", "jobset.x-k8s.io")
    assert jobset.startswith("jobset-train-") and job.startswith("job-train-")
    assert jobset.removeprefix("jobset-train-") != job.removeprefix("job-train-")
