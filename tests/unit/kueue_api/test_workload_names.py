"""Workload names follow Kueue's scheme, so the same Job gets the same Workload name."""

from kueue_api.workload_names import workload_name_for_owner


def test_matches_kueue_for_a_batch_job() -> None:
    assert workload_name_for_owner("name", "uid", "Job", "batch") == "job-name-ef3a1"


def test_long_names_are_truncated_to_253_characters() -> None:
    owner = "x" * 400
    name = workload_name_for_owner(owner, "uid", "Job", "batch")
    assert len(name) == 253
    assert name.startswith("job-xxx")
