"""The smallest engine world the unit tests start from, built one way for all of them."""

from __future__ import annotations

from worker_agent.engine import EngineState
from worker_agent.engine.model import (
    ClusterQueueSpec,
    EngineConfig,
    FlavorQuotas,
    FlavorSpec,
    LabelSelector,
    LocalQueueSpec,
    NamespaceSpec,
    PodSetSpec,
    ResourceGroup,
    ResourceQuota,
    WorkloadSpec,
)


def one_queue_state(cpu: int = 4, config: EngineConfig | None = None) -> EngineState:
    """Namespace `team` whose LocalQueue `lq` feeds ClusterQueue `cq`: `cpu` cpus of `default`."""
    state = EngineState(config)
    state.upsert_namespace(NamespaceSpec("team"))
    state.upsert_flavor(FlavorSpec("default"))
    group = ResourceGroup(("cpu",), (FlavorQuotas("default", {"cpu": ResourceQuota(cpu * 1000)}),))
    state.upsert_cluster_queue(
        ClusterQueueSpec("cq", resource_groups=(group,), namespace_selector=LabelSelector())
    )
    state.upsert_local_queue(LocalQueueSpec("team", "lq", "cq"))
    return state


def team_workload(
    name: str, pods: int, created: float, replaces: str | None = None
) -> WorkloadSpec:
    """A workload of `pods` one-cpu pods in `team`'s LocalQueue `lq`."""
    return WorkloadSpec(
        namespace="team",
        name=name,
        queue_name="lq",
        pod_sets=(PodSetSpec("main", pods, {"cpu": 1000}),),
        creation_time=created,
        replaces=replaces,
    )
