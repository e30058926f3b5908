"""`mkq validate`: one line per object, every error listed, exit 0 or 2."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mkq.cli import cli

EXAMPLES = Path("/work/shared/kueue-examples")

GOOD = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 9}
      - {name: memory, nominalQuota: 36Gi}
"""

BAD = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-b
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 9, borrowingLimit: 2}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: q
  namespace: team-b
spec:
  clusterQueue: team-b
  colour: blue
"""


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["validate", *args])
    return result.exit_code, result.stdout, result.stderr


def test_valid_files_exit_zero_with_one_line_per_object(tmp_path: Path) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(GOOD)
    code, out, _ = _run(str(path))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("ok") and "ResourceFlavor/default-flavor" in lines[0]
    assert "ClusterQueue/team-a" in lines[1] and "flavors [default-flavor]" in lines[1]
    assert lines[-1] == "2 valid, 0 invalid"


def test_invalid_files_exit_two_listing_every_error(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(GOOD)
    bad.write_text(BAD)
    code, out, err = _run(str(good), str(bad))
    assert code == 2
    assert out.count("\nok") + out.startswith("ok") == 2
    assert (
        f"error {bad}: document 1 (ClusterQueue/team-b): "
        "spec: Invalid value: borrowingLimit must be nil when cohort is empty"
    ) in err
    assert f"error {bad}: document 2 (LocalQueue/team-b/q): spec.colour: unknown field" in err
    assert err.splitlines()[-1] == "2 valid, 2 invalid"


def test_missing_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    code, _, err = _run(str(tmp_path / "nope.yaml"))
    assert code == 2
    assert "nope.yaml: cannot read" in err


def test_kueue_examples_validate_when_unsupported_kinds_are_skipped() -> None:
    code, out, err = _run("--skip-unsupported", str(EXAMPLES))
    assert code == 0, err
    assert "skip " in out and "AppWrapper" in out
    assert "error" not in out + err


def test_unsupported_kinds_fail_without_the_flag() -> None:
    code, _, err = _run(str(EXAMPLES / "jobs" / "sample-sparkapplication.yaml"))
    assert code == 2
    unsupported = "kind: unsupported kind 'SparkApplication' (sparkoperator.k8s.io/v1beta2)"
    assert f"(SparkApplication/spark-pi): {unsupported}" in err


def test_reads_stdin_when_given_a_dash() -> None:
    result = CliRunner().invoke(cli, ["validate", "-"], input=GOOD)
    assert result.exit_code == 0
    assert "ok    <stdin>: document 2: ClusterQueue/team-a" in result.stdout


def test_shape_errors_and_rule_errors_are_reported_together(tmp_path: Path) -> None:
    """A bad enum (pydantic refuses it) and a negative borrowingLimit (a rule) in one
    document: both are listed, not only the first kind."""
    path = tmp_path / "two.yaml"
    path.write_text(
        """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cq
spec:
  cohortName: c
  queueingStrategy: Sideways
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 9, borrowingLimit: -1}
"""
    )
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 2
    assert "spec.queueingStrategy" in result.output
    assert "resources[0].borrowingLimit" in result.output and "-1" in result.output


def test_every_error_of_a_document_is_listed_schema_crd_rules_and_webhook(tmp_path: Path) -> None:
    """One ClusterQueue breaking the schema (an unknown queueingStrategy), two of the CRD's
    rules (a borrowingLimit without a cohort; a flavor missing a covered resource) and a
    check of Kueue's webhook (a negative borrowingLimit): each error is listed, naming its
    field, the CRD's in kube-apiserver's words, and the run exits 2."""
    path = tmp_path / "cq.yaml"
    path.write_text(
        """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cq
spec:
  queueingStrategy: Sideways
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 9, borrowingLimit: -1}
"""
    )
    code, out, err = _run(str(path))
    assert code == 2
    where = f"error {path}: document 1 (ClusterQueue/cq): "
    assert [line for line in err.splitlines() if line.startswith("error")] == [
        f"{where}spec.queueingStrategy: Input should be 'StrictFIFO' or 'BestEffortFIFO' "
        "(got 'Sideways')",
        f"{where}spec: Invalid value: borrowingLimit must be nil when cohort is empty",
        f"{where}spec.resourceGroups[0]: Invalid value: flavors must have the same number of "
        "resources as the coveredResources",
        f"{where}spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: "
        'Invalid value: "-1": must be greater than or equal to 0',
    ]
    assert err.splitlines()[-1] == "0 valid, 1 invalid"
    assert "ok" not in out


def test_kueues_serving_samples_are_known_kinds_that_validate() -> None:
    samples = EXAMPLES / "serving-workloads"
    code, out, err = _run(
        str(samples / "sample-deployment.yaml"),
        str(samples / "sample-statefulset.yaml"),
        str(samples / "sample-leaderworkerset.yaml"),
        str(samples / "sample-leaderworkerset-tas.yaml"),
    )
    assert code == 0, err
    assert "Deployment/nginx-deployment" in out and "StatefulSet/nginx-statefulset" in out
    assert out.count("LeaderWorkerSet/nginx-leaderworkerset") == 2


def test_a_leaderworkerset_group_has_at_least_its_leader(tmp_path: Path) -> None:
    sample = (EXAMPLES / "serving-workloads" / "sample-leaderworkerset.yaml").read_text()
    bad = tmp_path / "lws.yaml"
    bad.write_text(sample.replace("size: 3", "size: 0"))
    code, _, err = _run(str(bad))
    assert code == 2
    assert "spec.leaderWorkerTemplate.size: Input should be greater than or equal to 1" in err


def test_a_serving_kinds_pods_must_restart_always(tmp_path: Path) -> None:
    sample = (EXAMPLES / "serving-workloads" / "sample-statefulset.yaml").read_text()
    bad = tmp_path / "sts.yaml"
    bad.write_text(
        sample.replace(
            "    spec:\n      containers:",
            "    spec:\n      restartPolicy: Never\n      containers:",
        )
    )
    code, _, err = _run(str(bad))
    assert code == 2
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Never"' in err
