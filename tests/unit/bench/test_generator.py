"""Reading Kueue's generator format: the shipped scenarios, and clear errors for bad files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench.scheduler.generator import GeneratorError, load_generator, parse_generator

KUEUE_PERF = Path("/work/shared/kueue-perf")


def _minimal(**workload: object) -> dict[str, object]:
    entry: dict[str, object] = {"className": "small", "runtimeMs": 200, "request": 1}
    entry.update(workload)
    return {
        "cohorts": [
            {
                "className": "cohort",
                "count": 1,
                "queuesSets": [
                    {
                        "className": "cq",
                        "count": 1,
                        "nominalQuota": 20,
                        "workloadsSets": [
                            {"count": 2, "creationIntervalMs": 100, "workloads": [entry]}
                        ],
                    }
                ],
            }
        ]
    }


def test_baseline_reads_every_field() -> None:
    generator = load_generator(KUEUE_PERF / "baseline" / "generator.yaml")
    (cohorts,) = generator.cohorts
    assert (cohorts.class_name, cohorts.count) == ("cohort", 5)
    (queues,) = cohorts.queues_sets
    assert (queues.class_name, queues.count, queues.nominal_milli) == ("cq", 6, 20_000)
    assert queues.borrowing_limit_milli == 100_000
    assert (queues.reclaim_within_cohort, queues.within_cluster_queue) == ("Any", "LowerPriority")
    small, _, large = queues.workloads_sets
    assert (small.count, small.creation_interval_ms) == (350, 100)
    (template,) = large.workloads
    assert (template.class_name, template.runtime_ms, template.priority) == ("large", 1000, 200)
    assert template.total_milli == 20_000
    assert generator.topology is None
    assert generator.resource_flavor.name == "rf"


def test_tas_reads_topology_flavor_and_tas_fields() -> None:
    generator = load_generator(KUEUE_PERF / "tas" / "generator.yaml")
    topology = generator.topology
    assert topology is not None
    assert [level.count for level in topology.levels] == [1, 10, 64]
    assert topology.levels[-1].node_label == "kubernetes.io/hostname"
    assert topology.node_cpu_milli == 96_000
    assert generator.resource_flavor.topology_name == "default-topology"
    balanced = generator.cohorts[0].queues_sets[0].workloads_sets[8].workloads[0]
    assert balanced.class_name == "large-balanced-rack"
    assert (balanced.tas_constraint, balanced.slice_size, balanced.pod_count) == ("balanced", 4, 8)
    assert balanced.tas_level == "cloud.provider.com/topology-rack"
    assert balanced.request_milli == 2_500
    assert balanced.total_milli == 20_000


def test_pod_count_applies_only_to_tas_workloads() -> None:
    generator = parse_generator(_minimal(podCount=4), "g.yaml")
    template = generator.cohorts[0].queues_sets[0].workloads_sets[0].workloads[0]
    assert template.effective_pod_count == 1


def test_unknown_field_is_named_with_its_path() -> None:
    document = _minimal()
    document["cohorts"][0]["queuesSets"][0]["workloadsSets"][0]["creationIntervallMs"] = 5  # type: ignore[index]
    with pytest.raises(GeneratorError) as error:
        parse_generator(document, "g.yaml")
    assert str(error.value).startswith(
        "g.yaml: cohorts[0].queuesSets[0].workloadsSets[0].creationIntervallMs: unknown field"
    )


def test_bad_quantity_is_named() -> None:
    with pytest.raises(GeneratorError) as error:
        parse_generator(_minimal(request="lots"), "g.yaml")
    assert "workloads[0].request: 'lots' is not a quantity" in str(error.value)


def test_missing_request_is_required() -> None:
    document = _minimal()
    del document["cohorts"][0]["queuesSets"][0]["workloadsSets"][0]["workloads"][0]["request"]  # type: ignore[index]
    with pytest.raises(GeneratorError, match=r"workloads\[0\]\.request: is required"):
        parse_generator(document, "g.yaml")


def test_tas_level_needs_a_topology() -> None:
    with pytest.raises(GeneratorError, match="tasLevel: needs a topology"):
        parse_generator(_minimal(tasLevel="rack", tasConstraint="required"), "g.yaml")


def test_tas_level_must_be_a_topology_level(tmp_path: Path) -> None:
    document = yaml.safe_load((KUEUE_PERF / "tas" / "generator.yaml").read_text())
    document["cohorts"][0]["queuesSets"][0]["workloadsSets"][0]["workloads"][0]["tasLevel"] = "zone"
    path = tmp_path / "generator.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(GeneratorError) as error:
        load_generator(path)
    assert str(error.value).startswith(f"{path}: cohorts[0].queuesSets[0].workloadsSets[0]")
    assert "'zone' is not a level of topology 'default-topology'" in str(error.value)


def test_wrong_type_and_bad_policy_are_named() -> None:
    with pytest.raises(GeneratorError, match=r"workloadsSets\[0\]\.count: must be an integer"):
        document = _minimal()
        document["cohorts"][0]["queuesSets"][0]["workloadsSets"][0]["count"] = "two"  # type: ignore[index]
        parse_generator(document, "g.yaml")
    with pytest.raises(
        GeneratorError, match=r"queuesSets\[0\]\.withinClusterQueue: must be one of"
    ):
        document = _minimal()
        document["cohorts"][0]["queuesSets"][0]["withinClusterQueue"] = "Sometimes"  # type: ignore[index]
        parse_generator(document, "g.yaml")


def test_unreadable_and_invalid_files_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(GeneratorError, match=r"missing\.yaml: cannot read"):
        load_generator(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("cohorts: [\n")
    with pytest.raises(GeneratorError, match=r"broken\.yaml: not valid YAML"):
        load_generator(broken)
    empty = tmp_path / "empty.yaml"
    empty.write_text("cohorts: []\n")
    with pytest.raises(GeneratorError, match=r"empty\.yaml: cohorts: must not be empty"):
        load_generator(empty)
