"""Names of workload, attempt and cluster states, shared by the store, API and dispatcher."""

from __future__ import annotations

from typing import Final

# Workload states (GET /workloads/{ns}/{name} -> "state").
PENDING: Final = "Pending"  # accepted, not yet copied to any worker
DISPATCHED: Final = "Dispatched"  # copies in the nominated workers, none admitted yet
ADMITTED: Final = "Admitted"  # a winner is recorded; the Job is (being) created there
RUNNING: Final = "Running"  # the winner's Job has started
SUCCEEDED: Final = "Succeeded"
FAILED: Final = "Failed"
EVICTED: Final = "Evicted"  # evicted by its worker or its worker was lost; dispatched again
CANCELLED: Final = "Cancelled"  # DELETE /workloads/{ns}/{name}

FINAL_STATES: Final = frozenset({SUCCEEDED, FAILED, CANCELLED})
UNDECIDED_STATES: Final = frozenset({PENDING, DISPATCHED, EVICTED})
WORKLOAD_STATES: Final = (
    PENDING,
    DISPATCHED,
    ADMITTED,
    RUNNING,
    SUCCEEDED,
    FAILED,
    EVICTED,
    CANCELLED,
)

# Attempt states (one copy in one cluster).
ATTEMPT_NOMINATED: Final = "Nominated"
ATTEMPT_WON: Final = "Admitted"
ATTEMPT_REMOVED: Final = "Removed"
ATTEMPT_EVICTED: Final = "Evicted"
ATTEMPT_LOST: Final = "Lost"
ATTEMPT_REFUSED: Final = "Refused"  # the worker answered the copy with a 4xx (dispatch.refusals)
ATTEMPT_ACTIVE: Final = frozenset({ATTEMPT_NOMINATED, ATTEMPT_WON})

# Cluster states.
CLUSTER_PENDING: Final = "Pending"
CLUSTER_CONNECTED: Final = "Connected"
CLUSTER_UNREACHABLE: Final = "Unreachable"
CLUSTER_INVALID_KUBECONFIG: Final = "InvalidKubeconfig"
