"""Plain pods and pod groups: who is queued, how groups split into podSets, release, finish."""

from kueue_api.jobs import PodSetInfo
from kueue_api.jobs import pod as pods


def pod(name: str, cpu: str = "1", gated: bool = True, phase: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if gated:
        spec["schedulingGates"] = [{"name": pods.ADMISSION_GATE}]
    obj = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"kueue.x-k8s.io/queue-name": "q", pods.GROUP_NAME_LABEL: "g"},
            "annotations": {pods.GROUP_TOTAL_ANNOTATION: "3"},
        },
        "spec": spec,
    }
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def test_only_gated_or_released_queued_pods_are_managed() -> None:
    assert pods.is_managed(pod("a"))
    ungated = pod("b", gated=False)
    assert not pods.is_managed(ungated)
    ungated["metadata"]["labels"][pods.MANAGED_LABEL] = "true"
    assert pods.is_managed(ungated)


def test_a_group_has_one_pod_set_per_shape() -> None:
    members = [pod("a"), pod("b"), pod("c", cpu="2")]
    assert pods.group_key(members[0]) == "ns/group/g"
    assert pods.total_count(members) == 3
    counts = sorted(p["count"] for p in pods.pod_sets(members))
    assert counts == [1, 2]
    assert all("schedulingGates" not in p["template"]["spec"] for p in pods.pod_sets(members))


def test_release_removes_the_gate_and_adds_the_flavor() -> None:
    info = PodSetInfo("main", 1, {"pool": "a"}, ({"key": "spot", "operator": "Exists"},))
    released = pods.released(pod("a"), info)
    assert released is not None
    assert "schedulingGates" not in released["spec"]
    assert released["spec"]["nodeSelector"] == {"pool": "a"}
    assert released["metadata"]["labels"][pods.MANAGED_LABEL] == "true"
    assert pods.released(released, info) is None


def test_release_keeps_the_topology_gate_only_for_a_topology_assignment() -> None:
    """prepare (pod_controller.go): the pod was created behind both gates (its gates can only
    go once it exists); the topology gate stays for a podSet placed by topology, for the
    ungater to lift with the pod's domain, and goes with the admission gate otherwise."""
    both = pod("a")
    both["spec"]["schedulingGates"].append({"name": pods.TOPOLOGY_GATE})
    placed = pods.released(both, PodSetInfo("main", 1, scheduling_gates=(pods.TOPOLOGY_GATE,)))
    assert placed is not None
    assert placed["spec"]["schedulingGates"] == [{"name": pods.TOPOLOGY_GATE}]
    plain = pods.released(both, PodSetInfo("main", 1))
    assert plain is not None and "schedulingGates" not in plain["spec"]
    # A pod created before it had the topology gate is not given one: it could not be.
    late = pods.released(pod("b"), PodSetInfo("main", 1, scheduling_gates=(pods.TOPOLOGY_GATE,)))
    assert late is not None and "schedulingGates" not in late["spec"]


def test_a_group_finishes_when_every_member_has() -> None:
    done = [pod("a", phase="Succeeded"), pod("b", phase="Succeeded")]
    assert pods.finished(done, 3) is None  # one member has not even been created
    finish = pods.finished([*done, pod("c", phase="Succeeded")], 3)
    assert finish is not None and finish.succeeded
    finish = pods.finished([*done, pod("c", phase="Failed")], 3)
    assert finish is not None and not finish.succeeded
