"""The agent -> manager report: `POST /api/v1/clusters/{name}/reports` (camelCase JSON).

The contract the worker agents build to (see the common brief): admissions, finishes,
evictions and capacity, with a reportId that makes a retried report a no-op. Times are RFC 3339
with their zone, as the agents write them (a naive one could not be stored).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

from kueue_api.quantity import QUANTITY_TEXT_PATTERN, Quantity


def _canonical_quantity(value: object) -> str:
    """Quantities travel as canonical strings; a bare number (e.g. a pod count) is accepted."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError("must be a Kubernetes quantity")
    return str(Quantity.parse(value))


# Kueue's counts and priorities are int32s.
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1

QuantityText = Annotated[
    str,
    BeforeValidator(_canonical_quantity),
    WithJsonSchema(
        {
            "description": "A Kubernetes quantity: 1, 500m, 2Gi, 1e3",
            "anyOf": [
                # A JSON integer beyond 64 bits is refused when the body is read.
                {"type": "number", "minimum": -(2**63), "maximum": 2**63 - 1},
                {"type": "string", "pattern": QUANTITY_TEXT_PATTERN},
            ],
        }
    ),
]


class Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class ReportedPodSet(Wire):
    name: str
    count: int = Field(default=0, ge=0, le=_INT32_MAX)
    flavors: dict[str, str] = Field(default_factory=dict)


class ReportedAdmission(Wire):
    namespace: str
    name: str
    uid: str | None = None
    cluster_queue: str | None = None
    admitted_at: AwareDatetime | None = None
    pod_sets: list[ReportedPodSet] = Field(default_factory=list)


class ReportedFinish(Wire):
    namespace: str
    name: str
    uid: str | None = None
    state: str = Field(pattern="^(Succeeded|Failed)$")
    finished_at: AwareDatetime | None = None
    message: str | None = None


class ReportedEviction(Wire):
    namespace: str
    name: str
    uid: str | None = None
    reason: str = "Evicted"
    at: AwareDatetime | None = None


class ReportedPriorityUsage(Wire):
    priority: int = Field(ge=_INT32_MIN, le=_INT32_MAX)
    usage: QuantityText


class ReportedCapacity(Wire):
    cluster_queue: str
    # The ClusterQueue's cohort, for the dashboard (older agents omit it).
    cohort: str | None = Field(default=None, max_length=253)
    flavor: str
    resource: str
    nominal: QuantityText
    usage: QuantityText
    pending: QuantityText = "0"
    # `usage` split by the priority of the admitted workloads holding it: what a workload of
    # higher priority could take back there by preemption. Older agents omit it (nothing known
    # to be preemptible).
    usage_by_priority: list[ReportedPriorityUsage] = Field(default_factory=list)


class AgentReport(Wire):
    report_id: str = Field(min_length=1, max_length=128)
    sent_at: AwareDatetime | None = None
    admissions: list[ReportedAdmission] = Field(default_factory=list)
    finishes: list[ReportedFinish] = Field(default_factory=list)
    evictions: list[ReportedEviction] = Field(default_factory=list)
    capacity: list[ReportedCapacity] | None = None


class ReportAck(Wire):
    accepted: bool
    duplicate: bool
