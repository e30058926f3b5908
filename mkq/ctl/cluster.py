"""One cluster through its kubeconfig, as kubectl reaches it (`--kubeconfig`, `KUBECONFIG`,
`~/.kube/config`; `--context`; the context's namespace), with the API's errors turned into
kubectl's words."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from kueue_api.jobs import KINDS as JOB_KINDS
from mkq.ctl.errors import CtlError
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import EVENTS, PODS, WORKLOADS, ResourceType

JsonObject = dict[str, Any]
TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def kubeconfig_path(given: str | None) -> str:
    path = given or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    path = path or str(Path.home() / ".kube" / "config")
    if not Path(path).is_file():
        raise CtlError(f"--kubeconfig: no kubeconfig at {path}")
    return path


def context_namespace(path: str, context: str | None) -> str:
    """The namespace of the kubeconfig's context (kubectl's default), else "default"."""
    try:
        config = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as error:
        raise CtlError(f"--kubeconfig {path}: {error}") from error
    name = context or config.get("current-context")
    for entry in config.get("contexts") or []:
        if entry.get("name") == name:
            return str((entry.get("context") or {}).get("namespace") or "default")
    if context:
        raise CtlError(f'--context: context "{context}" does not exist in {path}')
    return "default"


async def connect(path: str, context: str | None) -> KubeClient:
    try:
        return await KubeClient.from_kubeconfig(path, context)
    except Exception as error:  # kubernetes-asyncio raises plain exceptions for bad files
        raise CtlError(f"--kubeconfig {path}: {error}") from error


def display(rt: ResourceType) -> str:
    """`clusterqueues.kueue.x-k8s.io`, as kubectl names a resource in its errors."""
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural


def api_error(rt: ResourceType, name: str, error: ApiError) -> CtlError:
    """kubectl's `Error from server (NotFound): ... "name" not found`."""
    reason = error.reason or str(error.status)
    if error.not_found:
        return CtlError(f'Error from server (NotFound): {display(rt)} "{name}" not found')
    return CtlError(f"Error from server ({reason}): {error.message}")


async def get(client: KubeClient, rt: ResourceType, name: str, namespace: str | None) -> JsonObject:
    try:
        return await client.get(rt, name, namespace if rt.namespaced else None)
    except ApiError as error:
        raise api_error(rt, name, error) from error


async def list_objects(
    client: KubeClient, rt: ResourceType, namespace: str | None, selector: str | None = None
) -> list[JsonObject]:
    """All objects of a kind (in `namespace`, or everywhere for None)."""
    try:
        items, _ = await client.list(rt, namespace if rt.namespaced else None, selector or None)
    except ApiError as error:
        raise api_error(rt, "", error) from error
    return sorted(
        items,
        key=lambda o: ((o["metadata"].get("namespace") or ""), o["metadata"]["name"]),
    )


async def create(client: KubeClient, rt: ResourceType, obj: JsonObject) -> JsonObject:
    try:
        return await client.create(rt, obj)
    except ApiError as error:
        if error.conflict:
            raise CtlError(
                f'Error from server (AlreadyExists): {display(rt)} "{obj["metadata"]["name"]}" '
                "already exists"
            ) from error
        raise api_error(rt, obj["metadata"]["name"], error) from error


async def merge_patch(
    client: KubeClient, rt: ResourceType, name: str, namespace: str | None, patch: JsonObject
) -> JsonObject:
    """As kueuectl's stop and resume: a merge patch of the one field they change."""
    await get(client, rt, name, namespace)
    try:
        return await client.patch(rt, name, namespace if rt.namespaced else None, patch)
    except ApiError as error:
        raise api_error(rt, name, error) from error


async def events_for(client: KubeClient, obj: JsonObject) -> list[JsonObject]:
    """The Events about `obj` (by UID), from its namespace (`default` for a cluster-scoped
    object, where Kubernetes records theirs); none when Events may not be read."""
    meta = obj.get("metadata") or {}
    try:
        items, _ = await client.list(EVENTS, meta.get("namespace") or "default")
    except ApiError:
        return []
    return [e for e in items if (e.get("involvedObject") or {}).get("uid") == meta.get("uid")]


def job_kind(type_name: str) -> ResourceType | None:
    """TYPE[.API-GROUP] of `--for`: a job kind by its kind, singular or plural name."""
    name, _, group = type_name.lower().partition(".")
    for kind in JOB_KINDS:
        rt = kind.resource
        if name in (rt.kind.lower(), rt.plural, rt.plural.rstrip("s")) and (
            not group or group == rt.group
        ):
            return rt
    return None


async def pod_selector_for(client: KubeClient, target: str, namespace: str) -> str:
    """`--for TYPE[.API-GROUP]/NAME`: the selector of that job's pods (its kind's
    PodLabelSelector); `workload/NAME` takes its owning job."""
    type_name, sep, name = target.partition("/")
    if not sep or not name:
        raise CtlError(f"--for {target!r}: want TYPE[.API-GROUP]/NAME, e.g. job/sample-job")
    if type_name.lower() in ("workload", "workloads", "wl", "workload.kueue.x-k8s.io"):
        workload = await get(client, WORKLOADS, name, namespace)
        owners = workload["metadata"].get("ownerReferences") or []
        if not owners:
            raise CtlError(f'--for {target}: workload "{name}" has no owner job')
        type_name, name = str(owners[0]["kind"]), str(owners[0]["name"])
    rt = job_kind(type_name)
    if rt is None:
        known = ", ".join(k.resource.kind.lower() for k in JOB_KINDS)
        raise CtlError(
            f"--for {target!r}: unknown job type {type_name!r} (one of: {known}, workload)"
        )
    job = await get(client, rt, name, namespace)
    kind = next(k for k in JOB_KINDS if k.resource == rt)
    selector = kind.pod_selector(job)
    if not selector:
        raise CtlError(f"--for {target}: its pods cannot be told yet (its status names none)")
    return selector


async def pods_table(client: KubeClient, namespace: str | None, selector: str) -> JsonObject:
    """The server's `meta.k8s.io/v1` Table of the pods, which kubectl prints."""
    query = {"labelSelector": selector} if selector else None
    try:
        return await client.request(
            "GET", PODS.collection_path(namespace), query, accept=TABLE_ACCEPT
        )
    except ApiError as error:
        raise api_error(PODS, "", error) from error
