"""Ungating topology-assigned pods: each gated pod gets a domain with room, ranks first."""

from kueue_api.jobs import BATCH_JOB
from kueue_api.jobs.pod import TOPOLOGY_GATE
from worker_agent.topology import Domain, decode, plan_ungating, ungated
from worker_agent.workloads import pod_set_infos

LEVELS = ("cloud.com/rack", "kubernetes.io/hostname")
DOMAINS = [Domain(("r1", "n1"), 2), Domain(("r1", "n2"), 1)]


def pod(name: str, gated: bool = True, node: str | None = None, rank: int | None = None) -> dict:
    spec: dict = {}
    if gated:
        spec["schedulingGates"] = [{"name": TOPOLOGY_GATE}]
    if node:
        spec["nodeSelector"] = {"cloud.com/rack": "r1", "kubernetes.io/hostname": node}
    annotations = (
        {"batch.kubernetes.io/job-completion-index": str(rank)} if rank is not None else {}
    )
    return {"metadata": {"name": name, "namespace": "ns", "annotations": annotations}, "spec": spec}


def test_gated_pods_fill_domains_in_order() -> None:
    plan = plan_ungating(LEVELS, DOMAINS, [pod("a"), pod("b"), pod("c")])
    assert [(u.pod_key, u.node_selector["kubernetes.io/hostname"]) for u in plan] == [
        ("ns/a", "n1"),
        ("ns/b", "n1"),
        ("ns/c", "n2"),
    ]


def test_released_pods_keep_their_room() -> None:
    plan = plan_ungating(LEVELS, DOMAINS, [pod("a", gated=False, node="n1"), pod("b"), pod("c")])
    assert [(u.pod_key, u.node_selector["kubernetes.io/hostname"]) for u in plan] == [
        ("ns/b", "n1"),
        ("ns/c", "n2"),
    ]


def test_ranked_pods_take_their_ranks_domain() -> None:
    pods = [pod("x", rank=2), pod("y", rank=0), pod("z", rank=1)]
    plan = {
        u.pod_key: u.node_selector["kubernetes.io/hostname"]
        for u in plan_ungating(LEVELS, DOMAINS, pods)
    }
    assert plan == {"ns/y": "n1", "ns/z": "n1", "ns/x": "n2"}


def test_ungating_removes_the_gate_and_adds_the_selector() -> None:
    released = ungated(pod("a"), {"kubernetes.io/hostname": "n1"})
    assert released is not None
    assert "schedulingGates" not in released["spec"]
    assert released["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "n1"}
    assert ungated(released, {"kubernetes.io/hostname": "n2"}) is None


def test_a_topology_admission_gates_the_jobs_pods() -> None:
    encoded = {
        "levels": list(LEVELS),
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [{"universal": "r1"}, {"individual": {"roots": ["n1", "n2"]}}],
                "podCounts": {"individual": [2, 1]},
            }
        ],
    }
    levels, domains = decode(encoded)
    assert levels == LEVELS and domains == DOMAINS
    workload = {
        "metadata": {"name": "job-a-1"},
        "spec": {"podSets": [{"name": "main", "count": 3}]},
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "main", "count": 3, "flavors": {}, "topologyAssignment": encoded}
                ],
            }
        },
    }
    [info] = pod_set_infos(workload, {})
    job = {"spec": {"suspend": True, "template": {"spec": {"containers": []}}}}
    template = BATCH_JOB.run(job, [info])["spec"]["template"]
    assert template["spec"]["schedulingGates"] == [{"name": TOPOLOGY_GATE}]
    assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
    assert template["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == "job-a-1"
