"""Kueue API objects into TAS's plain data, and assignments back into the Workload status."""

from __future__ import annotations

from kueue_api.models import Node, Pod, PodSetTopologyRequest, PodSpec, ResourceFlavor, Topology
from worker_agent.engine.tas import (
    HOSTNAME_LABEL,
    DomainAssignment,
    PlacementFailure,
    PodSetTASRequest,
    SliceLayer,
    Taint,
    Toleration,
    TopologyAssignment,
    TopologyRequest,
    find_assignment,
    to_expanded,
)
from worker_agent.engine.tas.from_api import (
    assignment_from_api,
    assignment_to_api,
    flavor_snapshot,
    non_tas_pod_usage,
    tas_node,
    tas_required_affinity,
    tas_toleration,
    tas_topology_request,
)


def test_node_allocatable_is_in_kueue_units_and_state_follows_conditions() -> None:
    node = Node.model_validate(
        {
            "metadata": {"name": "x1", "labels": {HOSTNAME_LABEL: "x1"}},
            "spec": {
                "unschedulable": True,
                "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
            },
            "status": {
                "allocatable": {"cpu": "1500m", "memory": "1Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )
    converted = tas_node(node)
    assert converted.allocatable == {"cpu": 1500, "memory": 2**30, "pods": 110}
    assert converted.ready and converted.unschedulable
    assert converted.taints == (Taint(key="gpu", value="yes", effect="NoSchedule"),)


def test_a_node_without_a_true_ready_condition_is_not_ready() -> None:
    node = Node.model_validate(
        {
            "metadata": {"name": "x1"},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
        }
    )
    assert not tas_node(node).ready


def test_topology_request_fields_map_to_slice_layers() -> None:
    request = PodSetTopologyRequest.model_validate(
        {
            "required": "block",
            "podSetSliceRequiredTopology": "rack",
            "podSetSliceSize": 4,
            "podSetGroupName": "lws",
        }
    )
    assert tas_topology_request(request) == TopologyRequest(
        required="block", slice_layers=(SliceLayer("rack", 4),), pod_set_group_name="lws"
    )
    layered = PodSetTopologyRequest.model_validate(
        {
            "required": "dc",
            "podsetSliceRequiredTopologyConstraints": [
                {"topology": "zone", "size": 8},
                {"topology": "rack", "size": 4},
            ],
        }
    )
    converted = tas_topology_request(layered)
    assert converted is not None
    assert converted.slice_layers == (SliceLayer("zone", 8), SliceLayer("rack", 4))
    assert tas_topology_request(None) is None


def test_tolerations_and_required_affinity_from_a_pod_spec() -> None:
    spec = PodSpec.model_validate(
        {
            "containers": [{"name": "c", "image": "i"}],
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "gpu", "operator": "In", "values": ["h100"]}
                                ]
                            }
                        ]
                    }
                }
            },
        }
    )
    assert [tas_toleration(t) for t in spec.tolerations or []] == [
        Toleration(key="gpu", operator="Exists")
    ]
    terms = tas_required_affinity(spec.affinity)
    assert terms is not None
    assert terms[0].matches({"gpu": "h100"})
    assert not terms[0].matches({"gpu": "a100"})
    assert tas_required_affinity(None) is None


def test_assignments_round_trip_through_the_status_model() -> None:
    assignment = TopologyAssignment(
        levels=(HOSTNAME_LABEL,),
        domains=(DomainAssignment(("node-a-1",), 2), DomainAssignment(("node-a-2",), 1)),
    )
    status = assignment_to_api(assignment)
    assert status.model_dump(by_alias=True, exclude_none=True) == {
        "levels": [HOSTNAME_LABEL],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [{"individual": {"prefix": "node-a-", "roots": ["1", "2"]}}],
                "podCounts": {"individual": [2, 1]},
            }
        ],
    }
    assert assignment_from_api(status) == assignment


def test_only_bound_running_pods_without_tas_annotations_count_as_non_tas_usage() -> None:
    def pod(**fields: object) -> Pod:
        doc: dict[str, object] = {
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
        doc.update(fields)
        return Pod.model_validate(doc)

    bound = {"containers": [{"name": "c", "image": "i"}], "nodeName": "x1"}
    requests = {"cpu": 500}
    assert non_tas_pod_usage(pod(spec=bound), requests) == ("x1", {"cpu": 500, "pods": 1})
    assert non_tas_pod_usage(pod(), requests) is None
    finished = pod(spec=bound, status={"phase": "Succeeded"})
    assert non_tas_pod_usage(finished, requests) is None
    tas_pod = pod(
        spec=bound,
        metadata={
            "name": "p",
            "annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"},
        },
    )
    assert non_tas_pod_usage(tas_pod, requests) is None


def test_scenario_tas_018_from_api_objects() -> None:
    """shared/scenarios/tas-018 as API objects: Topology, ResourceFlavor, Nodes, a podset."""
    topology = Topology.model_validate(
        {
            "metadata": {"name": "tas-topology"},
            "spec": {
                "levels": [
                    {"nodeLabel": "cloud.com/topology-block"},
                    {"nodeLabel": "cloud.com/topology-rack"},
                    {"nodeLabel": HOSTNAME_LABEL},
                ]
            },
        }
    )
    flavor = ResourceFlavor.model_validate(
        {
            "metadata": {"name": "tas-flavor"},
            "spec": {"nodeLabels": {"tas-node": "true"}, "topologyName": "tas-topology"},
        }
    )
    layout = [("r1", "x3", "2", "10"), ("r2", "x5", "2", "20")] + [
        ("r3", host, "1", "10") for host in ("x1", "x6", "x2", "x4")
    ]
    nodes = [
        Node.model_validate(
            {
                "metadata": {
                    "name": f"b1-{rack}-{host}",
                    "labels": {
                        "tas-node": "true",
                        "cloud.com/topology-block": "b1",
                        "cloud.com/topology-rack": rack,
                        HOSTNAME_LABEL: host,
                    },
                },
                "status": {
                    "allocatable": {"cpu": cpu, "pods": pods},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
        for rack, host, cpu, pods in layout
    ]
    snapshot = flavor_snapshot(topology, flavor, nodes)
    request = PodSetTASRequest(
        "main",
        4,
        {"cpu": 1000},
        topology=tas_topology_request(
            PodSetTopologyRequest.model_validate({"required": "cloud.com/topology-block"})
        ),
    )
    result = find_assignment(snapshot, request)
    assert isinstance(result, TopologyAssignment)
    assert to_expanded(result) == {
        "levels": [HOSTNAME_LABEL],
        "domains": [{"values": [h], "count": 1} for h in ("x1", "x2", "x4", "x6")],
    }
    too_big = PodSetTASRequest("main", 9, {"cpu": 1000}, topology=request.topology)
    assert find_assignment(snapshot, too_big) == PlacementFailure(
        "main", 'topology "tas-topology" allows to fit only 8 out of 9 pod(s)'
    )
