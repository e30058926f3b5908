"""The real kubectl against kubesim: what an operator does with Kueue's YAML works as it does
against a real cluster."""

from __future__ import annotations

import asyncio
import json

import pytest

from kubesim import RunningCluster

from .conftest import EXAMPLES, KUEUE_CRDS, Kubectl, eventually

pytestmark = pytest.mark.kubectl

SETUP = EXAMPLES / "admin" / "single-clusterqueue-setup.yaml"

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: long
spec:
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.36
        command: ["sleep", "3600"]
"""


async def test_kueue_crds_and_examples_apply_and_print_their_columns(kubectl: Kubectl) -> None:
    await kubectl.ok("apply", "-f", str(KUEUE_CRDS))
    out = await kubectl.ok("apply", "-f", str(SETUP))
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue created" in out
    assert "localqueue.kueue.x-k8s.io/user-queue created" in out

    table = await kubectl.ok("get", "clusterqueues")
    header = table.splitlines()[0].split()
    assert header[:2] == ["NAME", "COHORT"]
    assert "PENDING" in header
    assert table.splitlines()[1].startswith("cluster-queue")

    queues = await kubectl.ok("get", "localqueues", "-n", "default")
    assert "CLUSTERQUEUE" in queues.splitlines()[0]
    assert "cluster-queue" in queues.splitlines()[1]


async def test_apply_twice_is_idempotent(kubectl: Kubectl) -> None:
    await kubectl.ok("apply", "-f", str(SETUP))
    before = json.loads(await kubectl.ok("get", "clusterqueue", "cluster-queue", "-o", "json"))
    again = await kubectl.ok("apply", "-f", str(SETUP))
    assert again.count("unchanged") == 3, again
    after = json.loads(await kubectl.ok("get", "clusterqueue", "cluster-queue", "-o", "json"))
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_server_side_apply_is_idempotent_and_drops_removed_fields(kubectl: Kubectl) -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "labels": {"team": "a", "tier": "gold"}},
        "data": {"x": "1", "y": "2"},
    }
    await kubectl.ok("apply", "--server-side", "-f", "-", stdin=json.dumps(manifest))
    first = json.loads(await kubectl.ok("get", "configmap", "settings", "-o", "json"))
    await kubectl.ok("apply", "--server-side", "-f", "-", stdin=json.dumps(manifest))
    second = json.loads(await kubectl.ok("get", "configmap", "settings", "-o", "json"))
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]

    del manifest["data"]["y"]
    del manifest["metadata"]["labels"]["tier"]
    await kubectl.ok("apply", "--server-side", "-f", "-", stdin=json.dumps(manifest))
    third = json.loads(
        await kubectl.ok("get", "configmap", "settings", "-o", "json", "--show-managed-fields")
    )
    assert third["data"] == {"x": "1"}
    assert third["metadata"]["labels"] == {"team": "a"}
    managers = [entry["manager"] for entry in third["metadata"]["managedFields"]]
    assert managers == ["kubectl"]


async def test_get_watch_sees_changes(kubectl: Kubectl) -> None:
    await kubectl.ok("apply", "-f", str(SETUP))
    watch = await asyncio.create_subprocess_exec(
        *kubectl.argv("get", "localqueues", "-n", "default", "-w", "--output-watch-events"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert watch.stdout is not None
    try:
        first = await asyncio.wait_for(watch.stdout.readline(), 15)
        assert b"EVENT" in first  # the header
        initial = await asyncio.wait_for(watch.stdout.readline(), 15)
        assert initial.split()[:2] == [b"ADDED", b"user-queue"]
        await kubectl.ok("label", "localqueue", "user-queue", "-n", "default", "team=ml")
        modified = await asyncio.wait_for(watch.stdout.readline(), 15)
        assert modified.split()[:2] == [b"MODIFIED", b"user-queue"]
        await kubectl.ok("delete", "localqueue", "user-queue", "-n", "default")
        deleted = await asyncio.wait_for(watch.stdout.readline(), 15)
        assert deleted.split()[:2] == [b"DELETED", b"user-queue"]
    finally:
        watch.terminate()
        await watch.wait()


async def test_delete_cascades_to_the_jobs_pods(kubectl: Kubectl, cluster: RunningCluster) -> None:
    await kubectl.ok("apply", "-f", "-", stdin=JOB)

    async def pods() -> list[str]:
        out = await kubectl.ok("get", "pods", "-l", "job-name=long", "-o", "name")
        return out.split()

    assert len(await eventually(lambda: _at_least(pods, 2), "the job's two pods")) == 2
    await kubectl.ok("delete", "job", "long")
    await eventually(lambda: _none(pods), "the pods to be garbage-collected")


async def _at_least(read, count: int):  # type: ignore[no-untyped-def]
    found = await read()
    return found if len(found) >= count else None


async def _none(read):  # type: ignore[no-untyped-def]
    return not await read()


async def test_printer_columns_and_wide_output_of_a_custom_resource(kubectl: Kubectl) -> None:
    widget = {
        "apiVersion": "test.kubesim.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"size": 3, "color": "red"},
    }
    await kubectl.ok("apply", "-f", "-", stdin=json.dumps(widget))
    normal = (await kubectl.ok("get", "widgets")).splitlines()
    # Like kube-apiserver, no Age column is added when a CRD declares its own columns.
    assert normal[0].split() == ["NAME", "SIZE", "READY"]
    assert normal[1].split()[:2] == ["w1", "3"]
    wide = (await kubectl.ok("get", "wd", "-o", "wide")).splitlines()
    assert wide[0].split() == ["NAME", "SIZE", "READY", "COLOR"]
    assert wide[1].split()[-1] == "red"


async def test_validation_errors_come_back_from_the_server(kubectl: Kubectl) -> None:
    widget = {
        "apiVersion": "test.kubesim.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "bad"},
        "spec": {"size": -1, "shape": "round"},
    }
    result = await kubectl("apply", "-f", "-", stdin=json.dumps(widget))
    assert result.code != 0
    assert 'unknown field "spec.shape"' in result.err

    del widget["spec"]["shape"]
    result = await kubectl("apply", "-f", "-", stdin=json.dumps(widget))
    assert result.code != 0
    assert "spec.size" in result.err and "greater than or equal to 0" in result.err


async def test_requests_without_the_token_are_unauthorized(kubectl: Kubectl) -> None:
    result = await kubectl("get", "namespaces", "--token", "wrong")
    assert result.code != 0
    assert "Unauthorized" in result.err or "credentials" in result.err


async def test_default_namespaces_exist(kubectl: Kubectl) -> None:
    names = (await kubectl.ok("get", "namespaces", "-o", "name")).split()
    assert "namespace/default" in names and "namespace/kube-system" in names


async def test_imperative_commands_sending_protobuf(kubectl: Kubectl) -> None:
    """kubectl's typed commands send protobuf bodies; kubesim decodes them like JSON."""
    await kubectl.ok("create", "namespace", "team-a")
    await kubectl.ok("create", "configmap", "cfg", "--from-literal=x=1", "-n", "team-a")
    await kubectl.ok(
        "create", "job", "hello", "--image=busybox:1.36", "-n", "team-a", "--", "sleep", "0.1"
    )
    config_map = json.loads(await kubectl.ok("get", "cm", "cfg", "-n", "team-a", "-o", "json"))
    assert config_map["data"] == {"x": "1"}
    assert "selfLink" not in config_map["metadata"]

    async def complete() -> bool:
        out = await kubectl.ok("get", "job", "hello", "-n", "team-a", "-o", "json")
        conditions = json.loads(out).get("status", {}).get("conditions", [])
        return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)

    await eventually(complete, "the job created by `kubectl create job` to complete")
    logs = await kubectl.ok("logs", "job/hello", "-n", "team-a")
    assert "exited with code 0" in logs


async def test_server_side_apply_merges_list_map_items_by_key(kubectl: Kubectl) -> None:
    def widget(parts: list[dict[str, object]], size: int | None = 2) -> str:
        spec: dict[str, object] = {"parts": parts}
        if size is not None:
            spec["size"] = size
        body = {
            "apiVersion": "test.kubesim.dev/v1",
            "kind": "Widget",
            "metadata": {"name": "ssa"},
            "spec": spec,
        }
        return json.dumps(body)

    mine = [{"name": "a", "count": 1}, {"name": "b", "count": 2}]
    await kubectl.ok("apply", "--server-side", "-f", "-", stdin=widget(mine))
    theirs = [{"name": "c", "count": 3}]
    await kubectl.ok(
        "apply", "--server-side", "--field-manager=other", "-f", "-", stdin=widget(theirs, None)
    )
    await kubectl.ok("apply", "--server-side", "-f", "-", stdin=widget(mine[:1]))
    spec = json.loads(await kubectl.ok("get", "widget", "ssa", "-o", "json"))["spec"]
    assert [part["name"] for part in spec["parts"]] == ["a", "c"]


async def test_auth_reviews_and_rbac_objects(kubectl: Kubectl) -> None:
    """No RBAC is enforced: every valid token may do anything, and says so."""
    assert (await kubectl.ok("auth", "can-i", "delete", "nodes")).strip() == "yes"
    assert "kubesim-admin" in await kubectl.ok("auth", "whoami")
    await kubectl.ok("create", "clusterrole", "reader", "--verb=get,list", "--resource=pods")
    role = json.loads(await kubectl.ok("get", "clusterrole", "reader", "-o", "json"))
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
