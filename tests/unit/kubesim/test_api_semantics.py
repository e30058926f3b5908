"""kube-apiserver rules applied by kubesim's Api, without HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.api import MERGE_PATCH, STRATEGIC_PATCH, Api, WriteOptions
from kubesim.resources import Registry
from kubesim.store import Store
from kueue_api.api_errors import ApiError
from kueue_api.jsoncopy import json_copy


@pytest.fixture
def api() -> Api:
    api = Api(Store(), Registry())
    api.create(api.type_for("/namespaces"), "", {"metadata": {"name": "default"}})
    return api


def job(name: str = "j", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x:1"}]}
            },
            **spec,
        },
    }


def test_no_op_update_keeps_the_resource_version(api: Api) -> None:
    maps = api.type_for("/configmaps")
    made = api.create(maps, "default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    same = api.patch(maps, "default", "c", MERGE_PATCH, {"data": {"a": "1"}})
    assert same["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    changed = api.patch(maps, "default", "c", MERGE_PATCH, {"data": {"a": "2"}})
    assert int(changed["metadata"]["resourceVersion"]) > int(made["metadata"]["resourceVersion"])


def test_job_defaults_and_selector(api: Api) -> None:
    made = api.create(api.type_for("batch/jobs"), "default", job())
    spec = made["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    uid = made["metadata"]["uid"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "j"
    assert made["status"] == {}


def test_job_template_is_immutable_unless_suspended(api: Api) -> None:
    jobs = api.type_for("batch/jobs")
    api.create(jobs, "default", job("running"))
    patch = {"spec": {"template": {"spec": {"nodeSelector": {"zone": "a"}}}}}
    with pytest.raises(ApiError) as raised:
        api.patch(jobs, "default", "running", STRATEGIC_PATCH, patch)
    assert raised.value.code == 422 and "spec.template" in raised.value.message

    api.create(jobs, "default", job("parked", suspend=True))
    updated = api.patch(jobs, "default", "parked", STRATEGIC_PATCH, patch)
    assert updated["spec"]["template"]["spec"]["nodeSelector"] == {"zone": "a"}
    assert updated["metadata"]["generation"] == 2


def test_job_needs_a_restart_policy_for_jobs(api: Api) -> None:
    body = job()
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(ApiError) as raised:
        api.create(api.type_for("batch/jobs"), "default", body)
    assert raised.value.code == 422
    assert raised.value.details["causes"][0]["field"] == "spec.template.spec.restartPolicy"


def test_pod_spec_is_immutable_except_allowed_fields(api: Api) -> None:
    pods = api.type_for("/pods")
    api.create(
        pods,
        "default",
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}},
    )
    image = {"spec": {"containers": [{"name": "c", "image": "x:2"}]}}
    assert (
        api.patch(pods, "default", "p", STRATEGIC_PATCH, image)["spec"]["containers"][0]["image"]
        == "x:2"
    )
    with pytest.raises(ApiError) as raised:
        api.patch(pods, "default", "p", STRATEGIC_PATCH, {"spec": {"nodeSelector": {"a": "b"}}})
    assert raised.value.code == 422


def test_dry_run_writes_nothing(api: Api) -> None:
    maps = api.type_for("/configmaps")
    before = api.store.rv
    api.create(maps, "default", {"metadata": {"name": "d"}}, options=WriteOptions(dry_run=True))
    assert api.store.rv == before
    assert api.store.get("/configmaps", "default", "d") is None


def test_crd_name_must_be_plural_dot_group(api: Api) -> None:
    crd = {
        "metadata": {"name": "wrong"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    with pytest.raises(ApiError) as raised:
        api.create(api.type_for("apiextensions.k8s.io/customresourcedefinitions"), "", crd)
    assert raised.value.code == 422
    assert "spec.names.plural" in raised.value.message


def test_status_bodies_carry_reason_and_code(api: Api) -> None:
    with pytest.raises(ApiError) as raised:
        api.get(api.type_for("/configmaps"), "default", "missing")
    status = raised.value.status()
    assert status["kind"] == "Status" and status["reason"] == "NotFound" and status["code"] == 404
    assert status["message"] == 'configmaps "missing" not found'


THING_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "status": {
            "type": "object",
            "properties": {
                "phase": {"type": "string", "enum": ["Pending", "Running"]},
                "placement": {
                    "type": "object",
                    "properties": {
                        "node": {"type": "string"},
                        "zone": {"type": "string", "default": "a"},
                    },
                },
            },
        },
    },
}


def things(api: Api) -> Any:
    crd = {
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": THING_SCHEMA},
                    "subresources": {"status": {}},
                }
            ],
        },
    }
    api.create(api.type_for("apiextensions.k8s.io/customresourcedefinitions"), "", crd)
    return api.type_for("example.com/things")


def test_status_writes_check_what_changed_and_keep_what_did_not(api: Api) -> None:
    rt = things(api)
    api.create(rt, "default", {"metadata": {"name": "t"}, "spec": {}})
    current = api.get(rt, "default", "t")
    placed = {**current, "status": {"phase": "Pending", "placement": {"node": "n1", "x": 1}}}
    stored = api.update(rt, "default", "t", placed, subresource="status")
    # A changed field is defaulted and pruned as ever.
    assert stored["status"]["placement"] == {"node": "n1", "zone": "a"}
    # Only the phase changes: the placement is kept as stored.
    running = {**stored, "status": {**stored["status"], "phase": "Running"}}
    again = api.update(rt, "default", "t", running, subresource="status")
    assert again["status"] == {"phase": "Running", "placement": {"node": "n1", "zone": "a"}}
    # A changed field is still validated.
    bad = {**again, "status": {**again["status"], "phase": "Lost"}}
    with pytest.raises(ApiError) as raised:
        api.update(rt, "default", "t", bad, subresource="status")
    assert raised.value.code == 422 and "status.phase" in raised.value.message


def test_updates_do_not_recheck_fields_left_as_stored(api: Api) -> None:
    """Validation ratcheting (kube-apiserver 1.30+): a field equal to the stored one passed
    when it was written, so a schema tightened since then does not block an update that leaves
    it alone; a field the update changes meets the new schema."""
    rt = things(api)
    api.create(rt, "default", {"metadata": {"name": "t"}, "spec": {"size": 3}})
    current = api.get(rt, "default", "t")
    api.update(rt, "default", "t", {**current, "status": {"phase": "Running"}}, "v1", "status")
    crds = api.type_for("apiextensions.k8s.io/customresourcedefinitions")
    crd = api.get(crds, "", "things.example.com")
    tightened = json_copy(crd)
    schema = tightened["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    schema["spec"] = {"type": "object", "properties": {"size": {"type": "integer", "maximum": 2}}}
    schema["status"]["properties"]["phase"]["enum"] = ["Pending"]
    api.update(crds, "", "things.example.com", tightened)
    rt = api.type_for("example.com/things")
    stored = api.get(rt, "default", "t")
    labelled = {**stored, "metadata": {**stored["metadata"], "labels": {"a": "b"}}}
    relabelled = api.update(rt, "default", "t", labelled)
    assert relabelled["metadata"]["labels"] == {"a": "b"}
    assert relabelled["spec"] == {"size": 3} and relabelled["status"] == {"phase": "Running"}
    with pytest.raises(ApiError) as raised:
        api.update(rt, "default", "t", {**relabelled, "spec": {"size": 4}})
    assert raised.value.code == 422 and "spec.size" in raised.value.message
