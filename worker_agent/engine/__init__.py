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
  `Eviction(key, reason="Preempted", message, preemptor, preemption_reason)`: the engine has
  already released the victim's quota and put it back in its queue; write the Evicted
  (reason Preempted) and Preempted (reason `preemption_reason`: InClusterQueue,
  InCohortReclamation, InCohortFairSharing, InCohortReclaimWhileBorrowing) conditions.
  `CycleResult.idle` is True when another cycle now would change nothing. An unexpected
  error (a bug) comes out as `CycleError(workload)`, naming the head the cycle was deciding;
  the state may then hold part of that cycle, so its owner rebuilds it.
- Admission checks (spec §11, `checks`): `AdmissionDecision.admission_checks` names the checks
  the reservation must pass; a Workload's status.admissionChecks enter as
  `WorkloadSpec.admission_checks` (`CheckStatus`); one with a Retry or Rejected check is not
  scheduled ("The workload has failed admission checks"). `is_admitted(cq_spec, info)` is
  Kueue's Admitted (reserved and every check Ready); `applicable_checks`, `sync_checks`,
  `retry_time` and `checks_message` are what a check runner needs to write states, requeue
  after Retry and word evictions as Kueue does.
- Semantics: Kueue v1beta2 quota admission (cohort trees, borrowing/lending limits, flavor
  assignment and fungibility, partial admission, StrictFIFO/BestEffortFIFO), classical
  preemption, fair sharing (Configuration `fairSharing`: DRS tournament and preemption
  strategies), admission fair sharing and TAS placement (`worker_agent.engine.tas`).
  One deliberate difference: a workload waiting for the victims of its preemptions goes
  first in the next cycle (Kueue's PrioritizePreemptorWorkloads, alpha there), which
  removes one loop: without it a reclaimed workload can be re-admitted ahead of its
  preemptor and preempted again, forever. A second one, the loop guard: two ClusterQueues
  that borrow and reclaim each other's quota can preempt each other forever in Kueue
  (`quiescence` explains how); the state remembers the (preemptor, victim) pairs preempted
  since the last outside change (`state.preemptions`: a workload added, removed or with a
  new spec, a queue, quota or cohort change; not the engine's own admissions and evictions
  echoed back) and a cycle refuses a preemption that would repeat one, leaving the
  preemptor pending ("preemption skipped: ... (loop guard)"). Every run, and the agent's
  cycles, then settle; runs that Kueue settles are unchanged. `run_until_quiescent` keeps
  `NoQuiescence` only as a last resort after `max_cycles`.
- Transitions the owner reports: `state.finish_workload(key)` (finished or deleted: quota is
  released and the cohort's inadmissible workloads are retried), `state.evict_workload(key)`
  (back to pending), `state.forget_admission(key)` (an admission could not be written).
- `pending_positions(state, cluster_queue)`: its pending Workloads in queue order, with
  their positions in the ClusterQueue and their LocalQueue (Kueue's visibility API).
- `run_until_quiescent(state, now)`: cycles until idle (what `mkq simulate` does).
- Status as Kueue writes it: `cluster_queue_status(state, name)`,
  `local_queue_status(state, namespace, name)`; `simulation_report(state)` gives the
  `mkq simulate` JSON.
- Writing back (kueue_api models, times in POSIX seconds): `admission_to_api(admission)` for
  status.admission (flavors, resourceUsage, count, compact topologyAssignment);
  `quota_reserved_condition`, `admitted_condition`, `pending_condition`,
  `eviction_conditions` for Workload conditions; `cluster_queue_status_to_api`,
  `local_queue_status_to_api` for queue status.
- A Workload update without status.admission keeps the quota the engine gave it (the write
  may lag); report a lost reservation with `evict_workload` or `forget_admission`.
- Admission fair sharing: call `state.sample_admission_fair_sharing(now)` every
  usageSamplingInterval; entry penalties are charged on admission by the cycle.
- waitForPodsReady: `EngineConfig.block_admission` (Configuration
  `waitForPodsReady.blockAdmission`) holds every new admission (pending reason
  WaitingForPodsReady) while a workload holding quota has `WorkloadSpec.pods_ready` False
  (the PodsReady condition); the timeouts themselves are the owner's (time is its input).
- Elastic jobs (`slices`): a `WorkloadSpec.replaces` slice is scheduled on its old slice's
  flavors with only the increase quota-checked; when it is admitted the old slice leaves the
  state in the same step (`state.retired`: write it Finished, reason WorkloadSliceReplaced).
  A podSet count lowered below the admitted count (scale-down) is charged at once for less.

Quantities inside the engine are ints in Kueue's units: cpu in millicores, everything else
`Quantity.Value()` rounded up (`amounts.format_amount` prints them as Kueue does).
"""

from worker_agent.engine.build import StateBuilder, workload_from
from worker_agent.engine.checks import (
    applicable_checks,
    checks_message,
    is_admitted,
    retry_time,
    sync_checks,
)
from worker_agent.engine.convert import (
    admission_to_api,
    admitted_condition,
    cluster_queue_status_to_api,
    eviction_conditions,
    local_queue_status_to_api,
    pending_condition,
    quota_reserved_condition,
)
from worker_agent.engine.cycle import (
    AdmissionDecision,
    CycleError,
    CycleResult,
    Eviction,
    PendingUpdate,
    schedule,
)
from worker_agent.engine.model import (
    Admission,
    AdmissionCheckRule,
    CheckState,
    CheckStatus,
    EngineConfig,
    PodSetAssignment,
)
from worker_agent.engine.quiescence import NoQuiescence, run_until_quiescent
from worker_agent.engine.report import (
    PendingPosition,
    cluster_queue_status,
    local_queue_status,
    pending_positions,
    simulation_report,
)
from worker_agent.engine.state import EngineState

__all__ = [
    "Admission",
    "AdmissionCheckRule",
    "AdmissionDecision",
    "CheckState",
    "CheckStatus",
    "CycleError",
    "CycleResult",
    "EngineConfig",
    "EngineState",
    "Eviction",
    "NoQuiescence",
    "PendingPosition",
    "PendingUpdate",
    "PodSetAssignment",
    "StateBuilder",
    "admission_to_api",
    "admitted_condition",
    "applicable_checks",
    "checks_message",
    "cluster_queue_status",
    "cluster_queue_status_to_api",
    "eviction_conditions",
    "is_admitted",
    "local_queue_status",
    "local_queue_status_to_api",
    "pending_condition",
    "pending_positions",
    "quota_reserved_condition",
    "retry_time",
    "run_until_quiescent",
    "schedule",
    "simulation_report",
    "sync_checks",
    "workload_from",
]
