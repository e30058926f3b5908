"""From the engine's decisions back to kueue_api models (what the agent writes)."""

from __future__ import annotations

import kueue_api as api
from kueue_api.quantity import Quantity
from worker_agent.engine.amounts import format_amount
from worker_agent.engine.model import Admission


def admission_to_api(admission: Admission) -> api.Admission:
    """status.admission for a Workload, with resourceUsage as Kueue formats it."""
    pod_sets = []
    for psa in admission.pod_sets:
        topology = None
        if psa.topology_assignment is not None:
            topology = api.TopologyAssignment.from_domains(
                list(psa.topology_assignment.levels),
                [(d.values, d.count) for d in psa.topology_assignment.domains],
            )
        pod_sets.append(
            api.PodSetAssignment(
                name=psa.name,
                flavors=dict(psa.flavors),
                resource_usage={
                    res: Quantity.parse(format_amount(res, value))
                    for res, value in psa.resource_usage.items()
                },
                count=psa.count,
                topology_assignment=topology,
            )
        )
    return api.Admission(cluster_queue=admission.cluster_queue, pod_set_assignments=pod_sets)
