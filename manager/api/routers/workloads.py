"""/api/v1/workloads: submit a Job, list and inspect workloads, cancel, nominate, read logs."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse
from kubernetes_asyncio.client.exceptions import ApiException
from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError

from kueue_api.jobs.base import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from kueue_api.jobs.checks import ManifestError
from kueue_api.priority import WORKLOAD_PRIORITY_CLASS, Priority, PriorityClassNotFound
from manager import states
from manager.api.bodies import body_schema, read_document
from manager.api.deps import Runtime, User
from manager.api.errors import USER_ROUTE_ERRORS, ApiError, error_responses, invalid_body
from manager.api.pagination import ContinueToken, decode_continue, encode_continue
from manager.api.params import (
    ClusterFilter,
    JobName,
    Limit,
    Namespace,
    NamespaceFilter,
    QueueFilter,
    StateFilter,
)
from manager.api.schemas import Nominations, Page, WorkloadOut
from manager.api.views import workload_view
from manager.db import workloads as queries
from manager.db.events import append_event, workload_events
from manager.db.tables import WorkloadRow
from manager.jobs import SubmittedJob, parse_job, workload_names
from manager.priority import job_priority
from manager.remote.api_errors import status_message
from manager.remote.connection import LOCAL_QUEUES, Unreachable
from manager.sources.manager_workload import WAITING_FOR_QUOTA

router = APIRouter(prefix="/api/v1/workloads", tags=["workloads"], responses=USER_ROUTE_ERRORS)


async def _queue_exists(runtime: Runtime, namespace: str, queue: str) -> bool | None:
    """True/False when some connected worker answers; None when none is connected."""
    ready = runtime.dispatcher.ready_connections()
    if not ready:
        return None
    for conn in ready.values():
        if (namespace, queue) in conn.caches[LOCAL_QUEUES]:
            return True
    answered = False
    for conn in ready.values():
        try:
            found = await conn.read_custom(LOCAL_QUEUES, queue, namespace)
        except Unreachable:
            continue
        answered = True
        if found is not None:
            return True
    return False if answered else None


async def _priority(runtime: Runtime, job: SubmittedJob) -> Priority:
    """Kueue's rule on the first worker that can tell (manager.priority); a class that no
    answering worker holds is refused; with no worker answering, priority 0."""
    missing: PriorityClassNotFound | None = None
    for conn in runtime.dispatcher.ready_connections().values():
        try:
            found = await job_priority(job, conn)
        except Unreachable:
            continue
        if isinstance(found, Priority):
            return found
        missing = found
    if missing is None:
        return Priority(None, 0)
    field = (
        f"metadata.labels[{PRIORITY_CLASS_LABEL}]"
        if missing.ref.kind == WORKLOAD_PRIORITY_CLASS
        else runtime.settings.dispatched_kinds().named(job.kind).pod_priority_class_field
    )
    raise ApiError(
        422,
        "UnknownPriorityClass",
        f"{missing.ref.kind} {missing.ref.name!r} does not exist in any connected worker",
        field,
    )


@router.post(
    "",
    status_code=201,
    response_model=WorkloadOut,
    response_model_by_alias=True,
    responses=error_responses(409, 413, 422, 503),
    openapi_extra=body_schema("JobManifest", yaml_allowed=True),
)
async def submit_workload(request: Request, runtime: Runtime, _: User) -> WorkloadOut:
    """Submit a manifest (JSON or YAML) of a kind the manager dispatches (a batch/v1 Job, a
    JobSet, a RayJob, a StatefulSet...) carrying the queue-name label."""
    try:
        job = parse_job(
            await read_document(request, yaml_allowed=True), runtime.settings.dispatched_kinds()
        )
    except ManifestError as error:
        raise ApiError(422, "Invalid", str(error), error.field) from error
    exists = await _queue_exists(runtime, job.namespace, job.queue)
    if exists is False:
        raise ApiError(
            422,
            "UnknownQueue",
            f"LocalQueue {job.namespace}/{job.queue} does not exist in any connected worker",
            f"metadata.labels[{QUEUE_NAME_LABEL}]",
        )
    priority = await _priority(runtime, job)
    uid = str(uuid.uuid4())
    kind = runtime.settings.dispatched_kinds().named(job.kind)
    names = workload_names(kind, job.manifest, uid)
    if not names:
        raise ApiError(
            422, "Invalid", f"a {job.kind} of no replicas has no Workload to run", "spec.replicas"
        )
    now = runtime.clock.now()
    gate = runtime.manager_queues
    held = gate is not None and gate.multikueue_queue(job.namespace, job.queue)
    if held is None:
        # Its queue may hold quota on the manager cluster; dispatching it unheld could
        # overrun that quota, so the client tries again once the cluster is listed.
        raise ApiError(
            503,
            "ServiceUnavailable",
            "the manager cluster's queues are not listed yet; retry in a few seconds",
            retry_after=2,
        )
    if held:
        message: str | None = WAITING_FOR_QUOTA
    else:
        message = None if exists else "no worker cluster is connected yet"
    row = queries.new_workload_row(
        job,
        uid=uid,
        workload_name=names[0],
        priority=priority,
        source="api",
        now=now,
        message=message,
        quota_reserved=False if held else None,
    )
    try:
        # The unique (namespace, name) constraint is the duplicate check: one round trip less.
        await queries.insert_submitted(
            runtime.dispatcher.writer, row, f"submitted to queue {job.queue}"
        )
    except IntegrityError as error:
        raise ApiError(
            409,
            "AlreadyExists",
            f"workload {job.namespace}/{job.name} already exists",
            "metadata.name",
        ) from error
    runtime.dispatcher.workload_added(row)
    if gate is not None and held:
        gate.wake()  # its Workload in the manager cluster holds its place in the queue
    return workload_view(row)


@router.get("", response_model=Page[WorkloadOut], response_model_by_alias=True)
async def list_workloads(
    runtime: Runtime,
    _: User,
    state: StateFilter = None,
    queue: QueueFilter = None,
    cluster: ClusterFilter = None,
    namespace: NamespaceFilter = None,
    limit: Limit = 100,
    continue_: ContinueToken = None,
) -> Page[WorkloadOut]:
    if state is not None and state not in states.WORKLOAD_STATES:
        raise ApiError(
            400, "BadRequest", f"state must be one of {', '.join(states.WORKLOAD_STATES)}", "state"
        )
    after = decode_continue(continue_)
    where = queries.WorkloadFilter(state=state, queue=queue, cluster=cluster, namespace=namespace)
    async with runtime.sessions() as session:
        rows = await queries.list_workloads(session, where, after_id=after, limit=limit + 1)
    page = rows[:limit]
    return Page[WorkloadOut](
        items=[workload_view(r) for r in page],
        continue_=encode_continue(page[-1].id) if len(rows) > limit else None,
    )


async def _load(runtime: Runtime, namespace: str, name: str) -> WorkloadRow:
    async with runtime.sessions() as session:
        row = await queries.get_workload(session, namespace, name)
    if row is None:
        raise ApiError(404, "NotFound", f"workload {namespace}/{name} not found", "name")
    return row


@router.get(
    "/{namespace}/{name}",
    response_model=WorkloadOut,
    response_model_by_alias=True,
    responses=error_responses(404),
)
async def get_workload(
    namespace: Namespace, name: JobName, runtime: Runtime, _: User
) -> WorkloadOut:
    """The workload with every dispatch attempt and its event history."""
    row = await _load(runtime, namespace, name)
    async with runtime.sessions() as session:
        events = await workload_events(session, row.id)
    return workload_view(row, events)


@router.delete(
    "/{namespace}/{name}",
    response_model=WorkloadOut,
    response_model_by_alias=True,
    responses=error_responses(404),
)
async def cancel_workload(
    namespace: Namespace, name: JobName, runtime: Runtime, _: User
) -> WorkloadOut:
    """Cancel: every remote copy is removed; a finished workload stays as it ended."""
    row = await _load(runtime, namespace, name)
    if row.state not in states.FINAL_STATES and not row.cancel_requested:
        async with runtime.decide() as session:
            fresh = await queries.get_workload_by_id(session, row.id, for_update=True)
            if fresh is not None and fresh.state not in states.FINAL_STATES:
                fresh.cancel_requested = True
                await append_event(
                    session,
                    at=runtime.clock.now(),
                    kind="CancelRequested",
                    message="cancellation requested",
                    workload_id=row.id,
                )
        runtime.dispatcher.enqueue(row.id)
        row = await _load(runtime, namespace, name)
    return workload_view(row)


@router.put(
    "/{namespace}/{name}/nominations",
    response_model=WorkloadOut,
    response_model_by_alias=True,
    responses=error_responses(404, 413, 422),
    openapi_extra=body_schema(Nominations),
)
async def nominate_clusters(
    namespace: Namespace, name: JobName, request: Request, runtime: Runtime, _: User
) -> WorkloadOut:
    """For the External dispatcher: the clusters that should get a copy."""
    try:
        body = Nominations.model_validate(await read_document(request))
    except ValidationError as error:
        raise invalid_body(error) from error
    row = await _load(runtime, namespace, name)
    async with runtime.decide() as session:
        await queries.set_external_nominations(session, row.id, body.clusters)
    runtime.dispatcher.enqueue(row.id)
    return workload_view(await _load(runtime, namespace, name))


@router.get(
    "/{namespace}/{name}/logs",
    response_class=PlainTextResponse,
    responses=error_responses(404, 409, 502, 503),
)
async def workload_logs(namespace: Namespace, name: JobName, runtime: Runtime, _: User) -> str:
    """Pod logs from the cluster that ran the workload."""
    row = await _load(runtime, namespace, name)
    if row.cluster is None:
        raise ApiError(409, "NotRunning", f"workload {namespace}/{name} has no winning cluster")
    conn = runtime.dispatcher.ready_connections().get(row.cluster)
    if conn is None:
        raise ApiError(503, "ClusterUnavailable", f"cluster {row.cluster} is not connected")
    try:
        logs = await conn.pod_logs(namespace, name, row.kind)
    except Unreachable as error:
        raise ApiError(503, "ClusterUnavailable", error.message) from error
    except ApiException as error:
        # The worker answered, with an error of its own (its RBAC, a pod gone): say so.
        raise ApiError(
            502,
            "BadGateway",
            f"cluster {row.cluster} answered {error.status}: {status_message(error)}",
        ) from error
    return "".join(f"==> {pod} <==\n{text}\n" for pod, text in logs)
