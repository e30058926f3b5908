"""/api/v1/clusters/{name}/reports: what an agent tells the manager, with that cluster's token."""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError

from manager.agent_report import AgentReport, ReportAck
from manager.api.bodies import body_schema, read_document
from manager.api.deps import AgentCredentials, Runtime, bearer_token
from manager.api.errors import ApiError, error_responses, invalid_body
from manager.api.params import ClusterName
from manager.db import clusters as cluster_queries
from manager.dispatch.reports import apply_report

router = APIRouter(prefix="/api/v1/clusters", tags=["reports"])


@router.post(
    "/{name}/reports",
    response_model=ReportAck,
    # 401 for a cluster that does not exist too: no answer tells which names exist.
    responses=error_responses(401, 413, 422, 503),
    openapi_extra=body_schema(AgentReport),
)
async def receive_report(
    name: ClusterName, request: Request, runtime: Runtime, credentials: AgentCredentials
) -> ReportAck:
    """An agent's report; accepted only with the token its cluster got at registration."""
    token = bearer_token(credentials)
    async with runtime.sessions() as session:
        cluster = await cluster_queries.get_cluster(session, name)
    if cluster is None or not runtime.tokens.matches(token, cluster.token_digest):
        raise ApiError(401, "Unauthorized", f"not a valid agent token for cluster {name!r}")
    if runtime.tokens.needs_upgrade(cluster.token_digest):
        await cluster_queries.upgrade_token_digest(
            runtime.sessions, name, cluster.token_digest, runtime.tokens.digest(token)
        )
    document = await read_document(request)
    try:
        report = AgentReport.model_validate(document)
    except ValidationError as error:
        raise invalid_body(error, "the report") from error
    now = runtime.clock.now()
    try:
        async with runtime.decide() as session:
            outcome = await apply_report(
                session, name, report, now, runtime.dispatcher.stale_copy_reader(name)
            )
    except IntegrityError:
        runtime.metrics.reports.labels(cluster=name, duplicate="true").inc()
        return ReportAck(accepted=True, duplicate=True)
    runtime.metrics.reports.labels(cluster=name, duplicate=str(outcome.duplicate).lower()).inc()
    if not outcome.duplicate:
        if report.capacity is not None:
            capacity = [c.model_dump(by_alias=True) for c in report.capacity]
            runtime.dispatcher.capacity_reported(name, capacity, now)
            runtime.metrics.capacity_reported(name, capacity)
        for done in outcome.finished:
            runtime.metrics.finished_workload(
                done.namespace, done.queue, done.priority_class, done.result, done.created_at, now
            )
        for workload_id in outcome.touched:
            runtime.dispatcher.enqueue(workload_id)
    return ReportAck(accepted=True, duplicate=outcome.duplicate)
