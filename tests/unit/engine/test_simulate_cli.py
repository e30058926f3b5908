"""`mkq simulate` as a user runs it: output shapes and errors that name file, document, field."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from mkq.commands.simulate import simulate

BASE = """
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: "2"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team}
spec: {clusterQueue: cq}
"""


def _workload(name: str, cpu: str, created: str = "2025-01-01T00:00:00Z") -> str:
    return f"""
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: {name}, namespace: team, creationTimestamp: "{created}"}}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - name: c
          resources: {{requests: {{cpu: "{cpu}"}}}}
"""


def _reserved(name: str, cpu: str, cluster_queue: str = "cq") -> str:
    """A workload already holding quota in `cluster_queue` (QuotaReserved, with its admission)."""
    return (
        _workload(name, cpu)
        + f"""status:
  admission:
    clusterQueue: {cluster_queue}
    podSetAssignments:
    - {{name: main, flavors: {{cpu: default}}, resourceUsage: {{cpu: "{cpu}"}}, count: 1}}
  conditions:
  - {{type: QuotaReserved, status: "True", reason: QuotaReserved, message: ok,
     lastTransitionTime: "2025-01-01T00:00:00Z"}}
"""
    )


def _run(tmp_path: Path, text: str, *args: str) -> tuple[int, str, str]:
    path = tmp_path / "input.yaml"
    path.write_text(text)
    result = CliRunner().invoke(simulate, [str(path), *args])
    return result.exit_code, result.stdout, result.stderr


def test_admitted_and_pending_workloads_in_json(tmp_path: Path) -> None:
    code, out, _ = _run(
        tmp_path,
        BASE + _workload("a", "1500m") + _workload("b", "1", "2025-01-01T00:00:01Z"),
    )
    assert code == 0
    workloads = json.loads(out)["workloads"]
    assert workloads["team/a"]["admitted"] is True
    assert workloads["team/a"]["clusterQueue"] == "cq"
    assert workloads["team/a"]["podSets"]["main"] == {
        "flavors": {"cpu": "default"},
        "count": 1,
        "resourceUsage": {"cpu": "1500m"},
    }
    assert workloads["team/b"]["admitted"] is False
    assert workloads["team/b"]["message"] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
        "flavor default, 500m more needed"
    )


def test_yaml_output(tmp_path: Path) -> None:
    code, out, _ = _run(tmp_path, BASE + _workload("a", "1"), "-o", "yaml")
    assert code == 0
    assert yaml.safe_load(out)["workloads"]["team/a"]["admitted"] is True


def test_unknown_kind_names_file_and_document(tmp_path: Path) -> None:
    code, _, err = _run(tmp_path, BASE + "---\napiVersion: v1\nkind: Gadget\nmetadata: {name: x}\n")
    assert code == 2
    assert "input.yaml: document 5 (Gadget/x): kind: unsupported kind" in err


def test_unknown_field_names_the_field(tmp_path: Path) -> None:
    code, _, err = _run(
        tmp_path,
        BASE.replace("queueingStrategy", "x")
        + _workload("a", "1").replace("queueName: lq", "queueName: lq\n  colour: red"),
    )
    assert code == 2
    assert "document 5 (Workload/team/a): spec.colour: unknown field" in err


def test_admission_naming_a_missing_cluster_queue_is_an_error(tmp_path: Path) -> None:
    code, _, err = _run(tmp_path, BASE + _reserved("r", "1", cluster_queue="nowhere"))
    assert code == 2
    assert "(Workload/team/r): status.admission.clusterQueue: Not found: 'nowhere'" in err


def test_running_workloads_hold_quota(tmp_path: Path) -> None:
    code, out, _ = _run(tmp_path, BASE + _reserved("r", "2") + _workload("new", "1"))
    assert code == 0
    workloads = json.loads(out)["workloads"]
    assert workloads["team/r"]["admitted"] is True
    assert workloads["team/new"]["admitted"] is False
