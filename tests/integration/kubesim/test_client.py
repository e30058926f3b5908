"""kubesim through kubernetes-asyncio, the client the manager and the agents use."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.exceptions import ApiException

from kubesim import ClusterSpec, RunningCluster, run_clusters

from .conftest import WIDGETS_CRD, eventually

GROUP, VERSION, PLURAL = "test.kubesim.dev", "v1", "widgets"
MERGE = "application/merge-patch+json"
# Every namespace holds it (kube-controller-manager's root-ca-cert-publisher); the tests below
# count the ConfigMaps they made.
ROOT_CA = "kube-root-ca.crt"


def widget(name: str, size: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size, **spec},
    }


def config_map(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": {"k": "v"}}


async def test_stale_update_conflicts(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    created = await core.create_namespaced_config_map("default", config_map("c"))
    created.data = {"k": "first"}
    await core.replace_namespaced_config_map("c", "default", created)
    created.data = {"k": "second"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as raised:
        await core.replace_namespaced_config_map("c", "default", created)
    assert raised.value.status == 409
    assert '"reason":"Conflict"' in raised.value.body.replace(" ", "")
    current = await core.read_namespaced_config_map("c", "default")
    assert current.data == {"k": "first"}


async def test_create_semantics(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    made = await core.create_namespaced_config_map(
        "default", {"metadata": {"generateName": "cm-"}, "data": {}}
    )
    assert made.metadata.name.startswith("cm-") and len(made.metadata.name) == 8
    assert made.metadata.uid and made.metadata.creation_timestamp is not None
    with pytest.raises(ApiException) as exists:
        await core.create_namespaced_config_map(
            "default", {"metadata": {"name": made.metadata.name}}
        )
    assert exists.value.status == 409 and "AlreadyExists" in exists.value.body
    with pytest.raises(ApiException) as missing:
        await core.create_namespaced_config_map("nowhere", config_map("x"))
    assert (
        missing.value.status == 404 and 'namespaces \\"nowhere\\" not found' in missing.value.body
    )
    with pytest.raises(ApiException) as bad_name:
        await core.create_namespaced_config_map("default", config_map("Not_Valid"))
    assert bad_name.value.status == 422


async def test_generation_moves_with_spec_not_metadata(api_client: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(api_client)
    made = await custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, widget("g")
    )
    assert made["metadata"]["generation"] == 1
    assert made["spec"]["color"] == "green"  # defaulted from the schema
    labelled = await custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "g",
        {"metadata": {"labels": {"a": "b"}}},
        _content_type=MERGE,
    )
    assert labelled["metadata"]["generation"] == 1
    resized = await custom.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "g", {"spec": {"size": 5}}, _content_type=MERGE
    )
    assert resized["metadata"]["generation"] == 2


async def test_status_subresource_isolation(api_client: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(api_client)
    body = widget("s")
    body["status"] = {"observed": 7}
    made = await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    assert "status" not in made  # status is not writable on create

    made["spec"]["size"] = 2
    made["status"] = {"observed": 1}
    updated = await custom.replace_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "s", made
    )
    assert updated["spec"]["size"] == 2 and "status" not in updated

    updated["spec"]["size"] = 99
    updated["status"] = {"observed": 3}
    with_status = await custom.replace_namespaced_custom_object_status(
        GROUP, VERSION, "default", PLURAL, "s", updated
    )
    assert with_status["status"] == {"observed": 3}
    assert with_status["spec"]["size"] == 2
    assert with_status["metadata"]["generation"] == 2  # status writes never bump generation


async def test_watch_resumes_from_a_resource_version(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    first = await core.create_namespaced_config_map("default", config_map("a"))
    await core.create_namespaced_config_map("default", config_map("b"))
    await core.patch_namespaced_config_map("a", "default", {"data": {"k": "changed"}})
    await core.delete_namespaced_config_map("b", "default")
    seen: list[tuple[str, str]] = []
    async with watch.Watch() as stream:
        async for event in stream.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=first.metadata.resource_version,
            timeout_seconds=5,
        ):
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 3:
                break
    assert seen == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]


async def test_watch_sends_bookmarks_and_honours_timeout() -> None:
    async with run_clusters([ClusterSpec(name="bookmarks", bookmark_interval=0.2)]) as clusters:
        configuration = client.Configuration()
        await config.load_kube_config_from_dict(
            clusters[0].kubeconfig, client_configuration=configuration
        )
        async with client.ApiClient(configuration) as api_client:
            await _bookmarks_until_timeout(api_client)


async def _bookmarks_until_timeout(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    listed = await core.list_namespaced_config_map("default")
    types = []
    async with watch.Watch() as stream:
        async for event in stream.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=listed.metadata.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=1,
        ):
            types.append(event["type"])
    assert types and set(types) == {"BOOKMARK"}


async def test_410_after_compaction_then_a_clean_relist(
    cluster: RunningCluster, api_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(api_client)
    old = await core.create_namespaced_config_map("default", config_map("old"))
    await core.create_namespaced_config_map("default", config_map("new"))
    cluster.compact()
    with pytest.raises(ApiException) as raised:
        async with watch.Watch() as stream:
            async for _ in stream.stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=old.metadata.resource_version,
                timeout_seconds=5,
            ):
                pass
    assert raised.value.status == 410
    relisted = await core.list_namespaced_config_map("default")
    names = sorted(item.metadata.name for item in relisted.items if item.metadata.name != ROOT_CA)
    assert names == ["new", "old"]
    await core.create_namespaced_config_map("default", config_map("later"))
    async with watch.Watch() as stream:
        async for event in stream.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=relisted.metadata.resource_version,
            timeout_seconds=5,
        ):
            assert (event["type"], event["object"].metadata.name) == ("ADDED", "later")
            break


async def test_selectors_and_pagination(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    for index in range(7):
        labels = {"app": "web" if index % 2 else "db", "idx": str(index)}
        await core.create_namespaced_config_map("default", config_map(f"cm-{index}", labels))

    async def names(**kwargs: Any) -> list[str]:
        listed = await core.list_namespaced_config_map("default", **kwargs)
        return [item.metadata.name for item in listed.items if item.metadata.name != ROOT_CA]

    assert await names(label_selector="app=web") == ["cm-1", "cm-3", "cm-5"]
    assert await names(label_selector="app!=web,idx notin (0,2)") == ["cm-4", "cm-6"]
    assert await names(label_selector="idx in (1,2),app") == ["cm-1", "cm-2"]
    assert await names(field_selector="metadata.name=cm-3") == ["cm-3"]
    with pytest.raises(ApiException) as raised:
        await names(field_selector="data.k=v")
    assert raised.value.status == 400

    pages: list[list[str]] = []
    token = None
    while True:
        listed = await core.list_namespaced_config_map(
            "default", label_selector="idx", limit=3, _continue=token
        )
        pages.append([item.metadata.name for item in listed.items])
        token = listed.metadata._continue
        if not token:
            break
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [name for page in pages for name in page] == [f"cm-{i}" for i in range(7)]


async def test_finalizers_hold_deletion_until_removed(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    body = config_map("held")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await core.create_namespaced_config_map("default", body)
    await core.delete_namespaced_config_map("held", "default")
    held = await core.read_namespaced_config_map("held", "default")
    assert held.metadata.deletion_timestamp is not None
    await core.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as raised:
        await core.read_namespaced_config_map("held", "default")
    assert raised.value.status == 404


async def test_namespace_deletion_empties_it(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    await core.create_namespace({"metadata": {"name": "team"}})
    await core.create_namespaced_config_map("team", config_map("inside"))
    await core.delete_namespace("team")

    async def gone() -> bool:
        try:
            await core.read_namespace("team")
        except ApiException as error:
            return error.status == 404
        return False

    await eventually(gone, "namespace team to go away")


async def test_strategic_merge_patch_merges_containers_by_name(
    api_client: client.ApiClient,
) -> None:
    core = client.CoreV1Api(api_client)
    pod = {
        "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {
            "schedulingGates": [{"name": "wait"}],
            "containers": [
                {"name": "one", "image": "busybox:1", "env": [{"name": "X", "value": "1"}]},
                {"name": "two", "image": "busybox:1"},
            ],
        },
    }
    await core.create_namespaced_pod("default", pod)
    patched = await core.patch_namespaced_pod(
        "p",
        "default",
        {"spec": {"containers": [{"name": "two", "image": "busybox:2"}]}},
    )
    images = {c.name: c.image for c in patched.spec.containers}
    assert images == {"one": "busybox:1", "two": "busybox:2"}
    assert patched.spec.containers[0].env[0].name == "X"


async def test_scheduler_respects_gates_selectors_taints_and_capacity() -> None:
    profile = {
        "nodes": [
            {
                "name": "small",
                "allocatable": {"cpu": "1", "memory": "1Gi"},
                "labels": {"size": "s"},
            },
            {
                "name": "tainted",
                "allocatable": {"cpu": "8", "memory": "8Gi"},
                "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
            },
        ]
    }
    async with run_clusters([ClusterSpec(name="sched", nodes=profile)]) as clusters:
        api = clusters[0].api
        pods = api.type_for("/pods")

        def pod(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
            return {
                "metadata": {"name": name},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "x:1", "resources": {"requests": {"cpu": cpu}}}
                    ],
                    **spec,
                },
            }

        api.create(pods, "default", pod("fits", "600m", nodeSelector={"size": "s"}))
        api.create(pods, "default", pod("too-big-for-small", "600m", nodeSelector={"size": "s"}))
        api.create(pods, "default", pod("gated", "100m", schedulingGates=[{"name": "g"}]))
        api.create(
            pods,
            "default",
            pod("tolerates", "4", tolerations=[{"key": "gpu", "operator": "Exists"}]),
        )

        async def node_of(name: str) -> str | None:
            current = api.get(pods, "default", name)
            return (current.get("spec") or {}).get("nodeName")

        assert await eventually(lambda: node_of("fits"), "fits to be bound") == "small"
        assert await eventually(lambda: node_of("tolerates"), "tolerates to be bound") == "tainted"

        async def unschedulable() -> str | None:
            current = api.get(pods, "default", "too-big-for-small")
            for condition in (current.get("status") or {}).get("conditions") or []:
                if condition.get("reason") == "Unschedulable":
                    return str(condition["message"])
            return None

        message = await eventually(unschedulable, "too-big-for-small to be unschedulable")
        assert "Insufficient cpu" in message
        await asyncio.sleep(0.2)
        assert await node_of("gated") is None
        api.delete(pods, "default", "fits")
        assert await eventually(lambda: node_of("too-big-for-small"), "freed capacity") == "small"


async def test_job_runs_to_complete(api_client: client.ApiClient) -> None:
    batch = client.BatchV1Api(api_client)
    job = {
        "metadata": {"name": "done"},
        "spec": {
            "completions": 3,
            "parallelism": 2,
            "template": {
                "metadata": {"annotations": {"kubesim.mkq.dev/run-for": "200ms"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox:1.36"}],
                },
            },
        },
    }
    await batch.create_namespaced_job("default", job)

    async def complete() -> Any:
        current = await batch.read_namespaced_job_status("done", "default")
        types = {c.type for c in current.status.conditions or [] if c.status == "True"}
        return current if "Complete" in types else None

    finished = await eventually(complete, "the job to complete")
    types = [c.type for c in finished.status.conditions]
    assert types == ["SuccessCriteriaMet", "Complete"]
    assert finished.status.succeeded == 3
    assert finished.status.completion_time is not None and finished.status.start_time is not None
    events = await client.CoreV1Api(api_client).list_namespaced_event(
        "default", field_selector="involvedObject.kind=Job,involvedObject.name=done"
    )
    reasons = [event.reason for event in events.items]
    assert reasons.count("SuccessfulCreate") == 3 and "Completed" in reasons


async def test_failing_pods_fail_the_job(api_client: client.ApiClient) -> None:
    batch = client.BatchV1Api(api_client)
    job = {
        "metadata": {"name": "broken"},
        "spec": {
            "backoffLimit": 1,
            "template": {
                "metadata": {
                    "annotations": {
                        "kubesim.mkq.dev/run-for": "50ms",
                        "kubesim.mkq.dev/exit-code": "3",
                    }
                },
                "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x:1"}]},
            },
        },
    }
    await batch.create_namespaced_job("default", job)

    async def failed() -> Any:
        current = await batch.read_namespaced_job_status("broken", "default")
        types = {c.type for c in current.status.conditions or [] if c.status == "True"}
        return current if "Failed" in types else None

    result = await eventually(failed, "the job to fail")
    assert result.status.failed == 2
    assert {c.type for c in result.status.conditions} == {"FailureTarget", "Failed"}


async def test_suspended_job_has_no_pods_and_managed_by_is_honoured(
    api_client: client.ApiClient, cluster: RunningCluster
) -> None:
    batch = client.BatchV1Api(api_client)
    core = client.CoreV1Api(api_client)
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x:1"}]}}
    await batch.create_namespaced_job(
        "default", {"metadata": {"name": "later"}, "spec": {"template": template}}
    )

    async def pods_of(name: str) -> list[Any]:
        listed = await core.list_namespaced_pod("default", label_selector=f"job-name={name}")
        return listed.items

    await eventually(lambda: pods_of("later"), "a pod for the running job")
    await batch.patch_namespaced_job("later", "default", {"spec": {"suspend": True}})
    await eventually(lambda: _empty(pods_of("later")), "the pods to be deleted on suspend")
    suspended = await batch.read_namespaced_job_status("later", "default")
    assert any(c.type == "Suspended" and c.status == "True" for c in suspended.status.conditions)

    await batch.create_namespaced_job(
        "default",
        {
            "metadata": {"name": "elsewhere"},
            "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "template": template},
        },
    )
    await asyncio.sleep(0.3)
    assert await pods_of("elsewhere") == []
    untouched = await batch.read_namespaced_job_status("elsewhere", "default")
    assert not untouched.status.conditions and not untouched.status.start_time


async def _empty(awaitable: Any) -> bool:
    return not await awaitable


async def test_crd_applied_at_runtime_is_served(api_client: client.ApiClient) -> None:
    extensions = client.ApiextensionsV1Api(api_client)
    crd = {
        "metadata": {"name": "gadgets.test.kubesim.dev"},
        "spec": {
            "group": GROUP,
            "scope": "Cluster",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    await extensions.create_custom_resource_definition(crd)
    established = await extensions.read_custom_resource_definition("gadgets.test.kubesim.dev")
    assert any(
        c.type == "Established" and c.status == "True" for c in established.status.conditions
    )
    custom = client.CustomObjectsApi(api_client)
    made = await custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "gadgets",
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Gadget",
            "metadata": {"name": "x"},
            "spec": {"any": 1},
        },
    )
    assert made["spec"] == {"any": 1}
    await extensions.delete_custom_resource_definition("gadgets.test.kubesim.dev")
    with pytest.raises(ApiException) as raised:
        await custom.list_cluster_custom_object(GROUP, VERSION, "gadgets")
    assert raised.value.status == 404


async def test_no_tasks_outlive_the_clusters() -> None:
    async with run_clusters(
        [ClusterSpec(name="a", crds=[WIDGETS_CRD]), ClusterSpec(name="b")]
    ) as clusters:
        assert clusters[0].url != clusters[1].url
        assert clusters[0].kubeconfig_path.is_file()
    leftovers = [t for t in asyncio.all_tasks() if t.get_name().startswith("kubesim-")]
    assert leftovers == []


async def test_indexed_job_and_ttl_after_finished(api_client: client.ApiClient) -> None:
    batch = client.BatchV1Api(api_client)
    core = client.CoreV1Api(api_client)
    job = {
        "metadata": {"name": "indexed"},
        "spec": {
            "completionMode": "Indexed",
            "completions": 3,
            "parallelism": 3,
            "ttlSecondsAfterFinished": 0,
            "template": {
                "metadata": {"annotations": {"kubesim.mkq.dev/run-for": "100ms"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x:1"}]},
            },
        },
    }
    await batch.create_namespaced_job("default", job)

    async def indexes() -> list[str]:
        listed = await core.list_namespaced_pod("default", label_selector="job-name=indexed")
        return sorted(
            p.metadata.annotations["batch.kubernetes.io/job-completion-index"] for p in listed.items
        )

    assert await eventually(indexes, "the indexed pods") == ["0", "1", "2"]

    async def deleted() -> bool:
        try:
            await batch.read_namespaced_job("indexed", "default")
        except ApiException as error:
            return error.status == 404
        return False

    await eventually(deleted, "the finished job to be deleted by its TTL")
    await eventually(lambda: _empty(indexes()), "its pods to be garbage-collected")


async def test_gated_pod_reports_scheduling_gated(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    pod = {
        "metadata": {"name": "gated"},
        "spec": {
            "schedulingGates": [{"name": "example.com/wait"}],
            "containers": [{"name": "c", "image": "x:1"}],
        },
    }
    await core.create_namespaced_pod("default", pod)

    async def gated_condition() -> Any:
        current = await core.read_namespaced_pod_status("gated", "default")
        return [c for c in current.status.conditions or [] if c.reason == "SchedulingGated"]

    assert await eventually(gated_condition, "the SchedulingGated condition")
    await core.patch_namespaced_pod("gated", "default", {"spec": {"schedulingGates": None}})

    async def bound() -> Any:
        current = await core.read_namespaced_pod("gated", "default")
        return current.spec.node_name

    assert await eventually(bound, "the ungated pod to be bound")


async def test_priority_class_sets_pod_priority(api_client: client.ApiClient) -> None:
    scheduling = client.SchedulingV1Api(api_client)
    core = client.CoreV1Api(api_client)
    await scheduling.create_priority_class({"metadata": {"name": "high"}, "value": 1000})
    container = [{"name": "c", "image": "x:1"}]
    pod = await core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "important"},
            "spec": {"priorityClassName": "high", "containers": container},
        },
    )
    assert pod.spec.priority == 1000
    with pytest.raises(ApiException) as raised:
        await core.create_namespaced_pod(
            "default",
            {
                "metadata": {"name": "lost"},
                "spec": {"priorityClassName": "nope", "containers": container},
            },
        )
    assert raised.value.status == 403


async def test_on_failure_pods_restart_until_the_backoff_limit(cluster: RunningCluster) -> None:
    api = cluster.api
    job = {
        "metadata": {"name": "flaky"},
        "spec": {
            "backoffLimit": 1,
            "template": {
                "metadata": {
                    "annotations": {
                        "kubesim.mkq.dev/run-for": "0s",
                        "kubesim.mkq.dev/exit-code": "1",
                    }
                },
                "spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [{"name": "m", "image": "x:1"}],
                },
            },
        },
    }
    api.create(api.type_for("batch/jobs"), "default", job)

    async def failed() -> Any:
        current = api.get(api.type_for("batch/jobs"), "default", "flaky")
        conditions = (current.get("status") or {}).get("conditions") or []
        return [c for c in conditions if c["type"] == "Failed" and c["status"] == "True"]

    # The first exit restarts the container in place; that one restart reaches backoffLimit 1.
    found = await eventually(failed, "the OnFailure job to fail", seconds=30)
    assert found[0]["reason"] == "BackoffLimitExceeded"


async def test_watchers_keep_up_with_a_burst_in_order(
    cluster: RunningCluster, api_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(api_client)
    start = (await core.list_namespaced_config_map("default")).metadata.resource_version
    burst = 2000

    async def watch_all() -> list[int]:
        versions: list[int] = []
        async with watch.Watch() as stream:
            async for event in stream.stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=start,
                label_selector="burst=yes",
                timeout_seconds=60,
            ):
                versions.append(int(event["raw_object"]["metadata"]["resourceVersion"]))
                if len(versions) == burst:
                    break
        return versions

    watchers = [asyncio.create_task(watch_all()) for _ in range(3)]
    await asyncio.sleep(0.2)
    maps = cluster.api.type_for("/configmaps")
    for index in range(burst):
        cluster.api.create(maps, "default", config_map(f"b{index}", {"burst": "yes"}))
        if index % 200 == 199:
            await asyncio.sleep(0)
    for versions in await asyncio.gather(*watchers):
        assert len(versions) == burst
        assert versions == sorted(versions) and len(set(versions)) == burst


async def test_multi_version_crd_serves_every_version(api_client: client.ApiClient) -> None:
    extensions = client.ApiextensionsV1Api(api_client)
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    await extensions.create_custom_resource_definition(
        {
            "metadata": {"name": "things.test.kubesim.dev"},
            "spec": {
                "group": GROUP,
                "scope": "Namespaced",
                "names": {"plural": "things", "kind": "Thing"},
                "versions": [
                    {"name": "v1beta1", "served": True, "storage": False, "schema": schema},
                    {"name": "v1", "served": True, "storage": True, "schema": schema},
                ],
            },
        }
    )
    custom = client.CustomObjectsApi(api_client)
    body = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Thing",
        "metadata": {"name": "t"},
        "spec": {"a": 1},
    }
    made = await custom.create_namespaced_custom_object(GROUP, "v1beta1", "default", "things", body)
    assert made["apiVersion"] == f"{GROUP}/v1beta1"
    patched = await custom.patch_namespaced_custom_object(
        GROUP, "v1beta1", "default", "things", "t", {"spec": {"a": 2}}, _content_type=MERGE
    )
    assert patched["spec"] == {"a": 2} and patched["apiVersion"] == f"{GROUP}/v1beta1"
    stored = await custom.get_namespaced_custom_object(GROUP, "v1", "default", "things", "t")
    assert stored["apiVersion"] == f"{GROUP}/v1" and stored["spec"] == {"a": 2}


async def test_deleted_pod_held_by_a_finalizer_is_stopped(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    pod = {
        "metadata": {"name": "held", "finalizers": ["example.com/keep"]},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x:1"}]},
    }
    await core.create_namespaced_pod("default", pod)

    async def phase() -> str:
        return (await core.read_namespaced_pod_status("held", "default")).status.phase

    assert await eventually(lambda: _is(phase(), "Running"), "the pod to run")
    await core.delete_namespaced_pod("held", "default")
    assert await eventually(lambda: _is(phase(), "Failed"), "the deleted pod to be stopped")
    await core.patch_namespaced_pod("held", "default", {"metadata": {"finalizers": None}})
    listed = await core.list_namespaced_pod("default", field_selector="metadata.name=held")
    assert listed.items == []


async def _is(awaitable: Any, expected: str) -> bool:
    return await awaitable == expected
