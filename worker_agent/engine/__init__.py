"""The admission engine: Kueue's quota admission as plain data and pure functions.

No I/O, no asyncio, no clock reads: time is always an argument (POSIX seconds).

Public API (stable; the worker agent and `mkq simulate` use only this):

- `EngineState(config=None)`: the engine's world, updated incrementally.
  Feed it kueue_api objects through `StateBuilder(state).apply(obj)` /
  `.delete(kind, namespace, name)` (ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
  Namespace, AdmissionCheck, WorkloadPriorityClass, Topology, Node, Configuration, Workload),
  or plain specs through `state.upsert_*` / `state.remove_*` (see `model`).
  A Workload with status.admission and QuotaReserved=True holds quota; Finished ones release it.
- `schedule(state, now) -> CycleResult`: one scheduling cycle. `CycleResult.admissions` are
  `AdmissionDecision(key, cluster_queue, admission: Admission, at)`; the engine has already
  assumed them (quota is held). `CycleResult.pending` are `PendingUpdate(key, reason,
  message)` for QuotaReserved=False in Kueue's words. `CycleResult.evictions` lists
  `Eviction(key, reason, message, preemptor, preemption_reason)` (preemption: issue 8).
  `CycleResult.idle` is True when another cycle now would change nothing.
- Transitions the owner reports: `state.finish_workload(key)` (finished or deleted: quota is
  released and the cohort's inadmissible workloads are retried), `state.evict_workload(key)`
  (back to pending), `state.forget_admission(key)` (an admission could not be written).
- `run_until_quiescent(state, now)`: cycles until idle (what `mkq simulate` does).
- Status as Kueue writes it: `cluster_queue_status(state, name)`,
  `local_queue_status(state, namespace, name)`; `simulation_report(state)` gives the
  `mkq simulate` JSON.
- `admission_to_api(admission)`: an `Admission` as a kueue_api `Admission` model for
  status.admission (flavors, resourceUsage, count, topologyAssignment).

Quantities inside the engine are ints in Kueue's units: cpu in millicores, everything else
`Quantity.Value()` rounded up (`amounts.format_amount` prints them as Kueue does).
"""

from worker_agent.engine.build import StateBuilder, workload_from
from worker_agent.engine.convert import admission_to_api
from worker_agent.engine.cycle import (
    AdmissionDecision,
    CycleResult,
    Eviction,
    PendingUpdate,
    schedule,
)
from worker_agent.engine.model import Admission, EngineConfig, PodSetAssignment
from worker_agent.engine.quiescence import NoQuiescence, run_until_quiescent
from worker_agent.engine.report import (
    cluster_queue_status,
    local_queue_status,
    simulation_report,
)
from worker_agent.engine.state import EngineState

__all__ = [
    "Admission",
    "AdmissionDecision",
    "CycleResult",
    "EngineConfig",
    "EngineState",
    "Eviction",
    "NoQuiescence",
    "PendingUpdate",
    "PodSetAssignment",
    "StateBuilder",
    "admission_to_api",
    "cluster_queue_status",
    "local_queue_status",
    "run_until_quiescent",
    "schedule",
    "simulation_report",
    "workload_from",
]
