"""/api/v1/clusters: register, list, inspect and remove worker clusters."""

from __future__ import annotations

import yaml
from fastapi import APIRouter, Request, Response
from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError

from kueue_api.documents import DocumentError, load_yaml
from manager.api.bodies import body_schema, read_document
from manager.api.deps import Runtime, User
from manager.api.errors import USER_ROUTE_ERRORS, ApiError, error_responses, invalid_body
from manager.api.pagination import ContinueToken, decode_continue, encode_continue
from manager.api.params import ClusterName, Limit
from manager.api.schemas import ClusterCreate, ClusterCreated, ClusterOut, Page
from manager.api.views import cluster_view
from manager.db import clusters as queries
from manager.db.credentials import new_token
from manager.db.events import append_event
from manager.remote.kubeconfig import KubeconfigError, load_kubeconfig

router = APIRouter(prefix="/api/v1/clusters", tags=["clusters"], responses=USER_ROUTE_ERRORS)


@router.post(
    "",
    status_code=201,
    response_model=ClusterCreated,
    response_model_by_alias=True,
    responses=error_responses(409, 413, 422),
    openapi_extra=body_schema(ClusterCreate),
)
async def register_cluster(request: Request, runtime: Runtime, _: User) -> ClusterCreated:
    """Register a worker; the answer carries its agent token, shown only this once."""
    try:
        body = ClusterCreate.model_validate(await read_document(request))
    except ValidationError as error:
        raise invalid_body(error) from error
    kubeconfig = body.kubeconfig
    try:
        if isinstance(kubeconfig, str):
            # Parsed here with the bounded loader (no aliases, bounded nesting), not by
            # load_kubeconfig's plain yaml.safe_load.
            kubeconfig = load_yaml(kubeconfig)
            if not isinstance(kubeconfig, dict):
                raise KubeconfigError("must be a kubeconfig object (apiVersion v1, kind Config)")
        config, _info = load_kubeconfig(kubeconfig)
    except (DocumentError, KubeconfigError) as error:
        raise ApiError(422, "InvalidKubeconfig", f"kubeconfig: {error}", "kubeconfig") from error
    except (AttributeError, TypeError) as error:
        # load_kubeconfig assumes the shape of a kubeconfig (lists of named objects); an object
        # of another shape fails inside it, and that is the client's input, not a crash.
        raise ApiError(
            422,
            "InvalidKubeconfig",
            "kubeconfig: not shaped like a kubeconfig (contexts, clusters and users are lists "
            "of objects with string names)",
            "kubeconfig",
        ) from error
    token = new_token()
    now = runtime.clock.now()
    try:
        async with runtime.decide() as session:
            if await queries.get_cluster(session, body.name) is not None:
                raise ApiError(
                    409, "AlreadyExists", f"cluster {body.name!r} already exists", "name"
                )
            await queries.add_cluster(
                session,
                name=body.name,
                kubeconfig_encrypted=runtime.cipher.encrypt(yaml.safe_dump(config)),
                token_digest=runtime.tokens.digest(token),
                source="api",
                now=now,
            )
            await append_event(
                session, at=now, kind="ClusterRegistered", message="registered", cluster=body.name
            )
    except IntegrityError as error:
        raise ApiError(
            409, "AlreadyExists", f"cluster {body.name!r} already exists", "name"
        ) from error
    await runtime.dispatcher.add_cluster(body.name)
    return ClusterCreated(name=body.name, token=token)


@router.get("", response_model=Page[ClusterOut], response_model_by_alias=True)
async def list_clusters(
    runtime: Runtime,
    _: User,
    limit: Limit = 100,
    continue_: ContinueToken = None,
) -> Page[ClusterOut]:
    after = decode_continue(continue_)
    async with runtime.sessions() as session:
        rows = [r for r in await queries.list_clusters(session) if r.id > after]
    page = rows[:limit]
    more = len(rows) > limit
    return Page[ClusterOut](
        items=[cluster_view(r) for r in page],
        continue_=encode_continue(page[-1].id) if more and page else None,
    )


@router.get(
    "/{name}",
    response_model=ClusterOut,
    response_model_by_alias=True,
    responses=error_responses(404),
)
async def get_cluster(name: ClusterName, runtime: Runtime, _: User) -> ClusterOut:
    async with runtime.sessions() as session:
        row = await queries.get_cluster(session, name)
    if row is None:
        raise ApiError(404, "NotFound", f"cluster {name!r} not found", "name")
    return cluster_view(row)


@router.delete("/{name}", status_code=204, responses=error_responses(404))
async def delete_cluster(name: ClusterName, runtime: Runtime, _: User) -> Response:
    """Forget a worker; workloads it held are dispatched again elsewhere."""
    async with runtime.sessions() as session:
        if await queries.get_cluster(session, name) is None:
            raise ApiError(404, "NotFound", f"cluster {name!r} not found", "name")
    await runtime.dispatcher.remove_cluster(name)
    async with runtime.decide() as session:
        await queries.delete_cluster(session, name)
        await append_event(
            session, at=runtime.clock.now(), kind="ClusterDeleted", message="deleted", cluster=name
        )
    return Response(status_code=204)


@router.post(
    "/{name}/token",
    response_model=ClusterCreated,
    response_model_by_alias=True,
    responses=error_responses(404),
)
async def rotate_token(name: ClusterName, runtime: Runtime, _: User) -> ClusterCreated:
    """A new agent token for the cluster (the old one stops working), shown only this once.

    Clusters defined by MultiKueueCluster objects get their agent token this way.
    """
    token = new_token()
    async with runtime.decide() as session:
        row = await queries.get_cluster(session, name)
        if row is None:
            raise ApiError(404, "NotFound", f"cluster {name!r} not found", "name")
        row.token_digest = runtime.tokens.digest(token)
        await append_event(
            session,
            at=runtime.clock.now(),
            kind="TokenRotated",
            message="new agent token",
            cluster=name,
        )
    return ClusterCreated(name=name, token=token)
