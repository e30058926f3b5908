"""The declarative job kind: a kind read from a Configuration entry's paths, with no code of its
own. Its podSets and pod requests, suspend and run with admission's placement and counts,
finished and running from the job's conditions, the worker's copy, its Workload name by
Kueue's rule, and a bad entry refused at load naming its field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_api.jobs import (
    BATCH_JOB,
    BUILT_IN,
    DeclarativeKind,
    PodSetInfo,
    declaring,
    job_kinds,
    kind_of,
)
from kueue_api.jobs.base import MULTIKUEUE_CONTROLLER, PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL
from kueue_api.jobs.checks import ManifestError, pod_requests
from kueue_api.loader import ConfigurationFileError, load_configuration
from kueue_api.models.config import DeclarativeKindSpec
from kueue_api.webhooks.configurations import webhook_configurations
from kueue_api.webhooks.mutation import Defaulting
from kueue_api.webhooks.review import parse
from kueue_api.webhooks.validation import validate
from kueue_api.workload_names import workload_name_for_owner
from tests.unit.webhooks.test_mutation import View, applied, review

Obj = dict[str, Any]

TRAINER: Obj = {
    "group": "example.com",
    "version": "v1",
    "kind": "Trainer",
    "plural": "trainers",
    "podSets": [
        {
            "name": "main",
            "templatePath": "spec.template",
            "countPath": "spec.replicas",
            "minCountPath": "spec.minReplicas",
        }
    ],
    "conditions": {"succeeded": ["Succeeded"], "failed": ["Failed"], "running": "Running"},
}
# Two podSets, one of a fixed count, and a managedBy field.
SERVER: Obj = {
    "group": "example.com",
    "version": "v1alpha1",
    "kind": "Server",
    "plural": "servers",
    "suspendPath": "spec.control.paused",
    "managedByPath": "spec.control.managedBy",
    "podOwnerLabel": "example.com/server",
    "podSets": [
        {"name": "leader", "templatePath": "spec.leader"},
        {"name": "workers", "templatePath": "spec.workers.template", "countPath": "spec.size"},
    ],
    "conditions": {"succeeded": ["Done"]},
}


def kind_of_spec(entry: Obj) -> DeclarativeKind:
    return DeclarativeKind(DeclarativeKindSpec.model_validate(entry))


def multikueue_view() -> View:
    return View(
        local_queues={("ns", "q"): {"spec": {"clusterQueue": "cq"}}},
        cluster_queues={"cq": {"spec": {"admissionChecks": ["mk"]}}},
        checks={"mk": {"spec": {"controllerName": MULTIKUEUE_CONTROLLER}}},
    )


def template(cpu: str = "1", **extra: Any) -> Obj:
    spec = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}
    return {"metadata": {"labels": {"app": "t"}, "name": "dropped"}, "spec": {**spec, **extra}}


def trainer(replicas: int | None = 3, **spec: Any) -> Obj:
    body: Obj = {"template": template(), **spec}
    if replicas is not None:
        body["replicas"] = replicas
    return {
        "apiVersion": "example.com/v1",
        "kind": "Trainer",
        "metadata": {
            "name": "t1",
            "namespace": "ns",
            "uid": "u-1",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": body,
    }


def server(size: int = 2, **control: Any) -> Obj:
    return {
        "apiVersion": "example.com/v1alpha1",
        "kind": "Server",
        "metadata": {"name": "s1", "namespace": "ns", "uid": "u-2"},
        "spec": {
            "control": control,
            "leader": template("500m"),
            "workers": {"template": template("2")},
            "size": size,
        },
    }


def test_its_identity_comes_from_the_entry() -> None:
    kind = kind_of_spec(TRAINER)
    assert kind.resource.api_version == "example.com/v1"
    assert (kind.resource.plural, kind.resource.kind) == ("trainers", "Trainer")
    assert kind.framework == "example.com/trainer"
    assert kind.pod_selector({"metadata": {"name": "t1"}}) == "example.com/trainer-name=t1"
    assert (
        kind_of_spec(SERVER).pod_selector({"metadata": {"name": "s1"}}) == "example.com/server=s1"
    )
    assert kind.pod_priority_class_field == "spec.template.spec.priorityClassName"


@pytest.mark.parametrize(
    ("entry", "job", "expected"),
    [
        # Count from its path; a minCount below it is partial admission's floor.
        (TRAINER, trainer(3, minReplicas=1), [("main", 3, 1)]),
        (TRAINER, trainer(3, minReplicas=3), [("main", 3, None)]),
        # A count absent from the job is the entry's fixed count, 1 by default.
        (TRAINER, trainer(None), [("main", 1, None)]),
        # In the entry's order, a podSet without a count path of the fixed count.
        (SERVER, server(4), [("leader", 1, None), ("workers", 4, None)]),
    ],
)
def test_pod_sets_follow_the_entry_paths(
    entry: Obj, job: Obj, expected: list[tuple[str, int, int | None]]
) -> None:
    pod_sets = kind_of_spec(entry).pod_sets(job)
    assert [(p["name"], p["count"], p.get("minCount")) for p in pod_sets] == expected
    # Of the template's metadata, only labels and annotations reach the Workload.
    assert all(p["template"]["metadata"] == {"labels": {"app": "t"}} for p in pod_sets)


def test_pod_requests_are_the_templates_by_kueues_rules() -> None:
    job = server()
    job["spec"]["workers"]["template"]["spec"]["initContainers"] = [
        {"name": "init", "image": "i", "resources": {"requests": {"cpu": "3"}}}
    ]
    job["spec"]["workers"]["template"]["spec"]["overhead"] = {"cpu": "100m"}
    pod_sets = kind_of_spec(SERVER).pod_sets(job)
    requests = [pod_requests(p["template"]["spec"], "spec")["cpu"] for p in pod_sets]
    # The leader's 500m; the workers' init container's 3 (above their 2) plus the overhead.
    assert requests == [500, 3100]


def test_a_topology_annotation_makes_a_topology_request() -> None:
    job = trainer()
    annotation = {"kueue.x-k8s.io/podset-required-topology": "rack"}
    job["spec"]["template"]["metadata"]["annotations"] = annotation
    (pod_set,) = kind_of_spec(TRAINER).pod_sets(job)
    assert pod_set["topologyRequest"] == {"required": "rack"}


def test_suspend_and_run_with_admissions_placement_and_counts() -> None:
    kind = kind_of_spec(TRAINER)
    suspended = kind.suspend(trainer(3, minReplicas=1))
    assert kind.is_suspended(suspended) and kind.suspend_patch() == {"spec": {"suspend": True}}
    info = PodSetInfo(
        "main",
        2,
        node_selector={"flavor": "spot"},
        tolerations=({"key": "spot", "operator": "Exists", "effect": "NoSchedule"},),
        labels={"l": "v"},
    )
    running = kind.run(suspended, [info])
    assert not kind.is_suspended(running)
    placed = running["spec"]["template"]
    assert placed["spec"]["nodeSelector"] == {"flavor": "spot"}
    assert placed["spec"]["tolerations"][0]["key"] == "spot"
    assert placed["metadata"]["labels"] == {"app": "t", "l": "v"}
    # Partially admitted: the admitted count goes back at its path.
    assert running["spec"]["replicas"] == 2
    # Restored from the Workload's original podSets: placement out, count back.
    originals = kind.pod_sets(suspended)
    restored = kind.restore(kind.suspend(running), originals)
    assert "nodeSelector" not in restored["spec"]["template"]["spec"]
    assert restored["spec"]["replicas"] == 3
    with pytest.raises(ValueError, match="1 podSets, admission 2"):
        kind.run(suspended, [info, info])


def test_a_nested_suspend_path_and_a_fixed_count_are_left_alone() -> None:
    kind = kind_of_spec(SERVER)
    running = kind.run(kind.suspend(server(2)), [PodSetInfo("leader", 1), PodSetInfo("workers", 2)])
    assert running["spec"]["control"]["paused"] is False
    assert running["spec"]["size"] == 2
    assert "count" not in running["spec"]["leader"]


@pytest.mark.parametrize(
    ("conditions", "finished", "running"),
    [
        ([], None, False),
        ([("Running", "True")], None, True),
        ([("Running", "False"), ("Succeeded", "True")], ("Succeeded", "done"), False),
        ([("Failed", "True")], ("Failed", "done"), False),
        ([("Succeeded", "False")], None, False),
    ],
)
def test_finished_and_running_read_the_declared_conditions(
    conditions: list[tuple[str, str]], finished: tuple[str, str] | None, running: bool
) -> None:
    kind = kind_of_spec(TRAINER)
    job = kind.resumed(trainer())
    job["status"] = {
        "conditions": [{"type": t, "status": s, "message": "done"} for t, s in conditions]
    }
    found = kind.finished(job)
    assert (found.state, found.message) == finished if found else finished is None
    assert kind.pods_ready(job) is running and kind.is_active(job) is running
    assert kind.has_started(job) is (running or finished is not None)


def test_without_a_running_condition_an_unsuspended_job_counts_as_started_and_ready() -> None:
    kind = kind_of_spec(SERVER)
    suspended, resumed = kind.suspend(server()), kind.resumed(server())
    assert not kind.pods_ready(suspended) and not kind.has_started(suspended)
    assert kind.pods_ready(resumed) and kind.has_started(resumed)
    assert not kind.is_active(resumed)


def test_managed_by_lives_where_the_entry_says_or_nowhere() -> None:
    with_field, without = kind_of_spec(SERVER), kind_of_spec(TRAINER)
    marked = with_field.with_managed_by(server(), MULTIKUEUE_CONTROLLER)
    assert marked["spec"]["control"]["managedBy"] == MULTIKUEUE_CONTROLLER
    assert with_field.managed_by(marked) == MULTIKUEUE_CONTROLLER
    copy = with_field.worker_copy(marked, workload_name="w", origin="mgr")
    assert "managedBy" not in copy["spec"]["control"] and copy["spec"]["control"]["paused"]
    # No managedBy field: nothing to name MultiKueue in, and a field of the kind's own kept.
    job = trainer(managedBy="someone")
    assert without.with_managed_by(job, MULTIKUEUE_CONTROLLER) == job
    assert without.managed_by(job) is None
    copy = without.worker_copy(job, workload_name="w", origin="mgr")
    assert copy["spec"]["managedBy"] == "someone"
    assert copy["metadata"]["labels"][PREBUILT_WORKLOAD_LABEL] == "w"
    assert "uid" not in copy["metadata"] and copy["spec"]["suspend"] is True


def test_its_workload_name_is_kueues_for_the_owner() -> None:
    kind = kind_of_spec(TRAINER)
    name = workload_name_for_owner("t1", "u-1", kind.resource.kind, kind.resource.group)
    assert name.startswith("trainer-t1-") and len(name) == len("trainer-t1-") + 5


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda j: j["spec"].pop("template"), "spec.template"),
        (lambda j: j["spec"].update(template="a string"), "spec.template"),
        (
            lambda j: j["spec"]["template"]["spec"].pop("containers"),
            "spec.template.spec.containers",
        ),
        (lambda j: j["spec"].update(replicas=-1), "spec.replicas"),
        (lambda j: j["spec"].update(minReplicas=9), "spec.minReplicas"),
    ],
)
def test_a_job_whose_paths_hold_no_template_or_count_is_refused_by_field(
    change: Any, field: str
) -> None:
    job = trainer(3)
    change(job)
    with pytest.raises(ManifestError) as error:
        kind_of_spec(TRAINER).check(job)
    assert error.value.field == field


def test_the_validating_webhook_refuses_a_job_whose_path_holds_no_template() -> None:
    kinds = declaring([DeclarativeKindSpec.model_validate(TRAINER)])
    settings = Defaulting(kinds=kinds, frameworks=kinds.frameworks)
    bad = trainer(3, template="not a template")
    answer = validate(parse(review(bad)), settings.frameworks, None, settings)
    assert not answer.allowed and "spec.template" in answer.message
    assert validate(parse(review(trainer(3))), settings.frameworks, None, settings).allowed


def configuration(tmp_path: Path, entry: Obj) -> Path:
    path = tmp_path / "config.yaml"
    document = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "integrations": {"declarativeKinds": [entry]},
    }
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_good_entry_loads(tmp_path: Path) -> None:
    loaded = load_configuration(configuration(tmp_path, TRAINER))
    (spec,) = loaded.integrations.declarative_kinds or []
    assert spec.kind == "Trainer" and spec.pod_sets[0].template_path == "spec.template"


AT = "integrations.declarativeKinds[0]"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda e: e["podSets"][0].pop("templatePath"), "podSets[0].templatePath"),
        (lambda e: e["podSets"][0].update(templatePath="template"), "podSets[0].templatePath"),
        (lambda e: e["podSets"][0].update(countPath="spec..n"), "podSets[0].countPath"),
        (lambda e: e["podSets"][0].update(templatePath="spec.suspend"), "podSets[0].templatePath"),
        (lambda e: e["podSets"].append(dict(e["podSets"][0])), "podSets[1].name"),
        (lambda e: e.update(podSets=[]), "podSets"),
        (lambda e: e.pop("plural"), "plural"),
        (lambda e: e.update(plural="Trainers"), "plural"),
        (lambda e: e.update(kind="trainer"), "kind"),
        (lambda e: e.update(kind="Job"), "kind"),
        (lambda e: e.update(group="Example_com"), "group"),
        (lambda e: e["conditions"].update(succeeded=[]), "conditions.succeeded"),
        (lambda e: e.update(finished={}), "finished"),
    ],
)
def test_a_bad_entry_is_refused_at_load_naming_its_field(
    tmp_path: Path, change: Any, field: str
) -> None:
    entry = copy.deepcopy(TRAINER)
    change(entry)
    with pytest.raises(ConfigurationFileError) as error:
        load_configuration(configuration(tmp_path, entry))
    assert f"{AT}.{field}:" in str(error.value)


def test_a_configuration_adds_its_kinds_to_the_built_in_ones(tmp_path: Path) -> None:
    kinds = job_kinds(load_configuration(configuration(tmp_path, TRAINER)))
    assert isinstance(kinds.of(trainer()), DeclarativeKind)
    assert kinds.named("Trainer").framework == "example.com/trainer"
    assert kinds.named("Job") is BATCH_JOB and kinds.declared == (kinds.named("Trainer"),)
    # Another version of the kind is not it; the built-in registry never knows it.
    assert kinds.of({**trainer(), "apiVersion": "example.com/v2"}) is None
    assert kind_of(trainer()) is None and job_kinds(None) == BUILT_IN


def test_the_webhook_suspends_a_declared_kind_and_names_multikueue_where_it_can() -> None:
    kinds = declaring([DeclarativeKindSpec.model_validate(e) for e in (TRAINER, SERVER)])
    settings = Defaulting(kinds=kinds, frameworks=kinds.frameworks)
    view = View()
    created = applied(trainer(3), view, settings)
    assert created["spec"]["suspend"] is True
    # Not a declared framework here: left alone.
    assert applied(trainer(3), view, Defaulting(kinds=kinds)) == trainer(3)
    # On the manager cluster, a MultiKueue queue's job gets managedBy when its kind has one.
    manager = Defaulting(kinds=kinds, frameworks=kinds.frameworks, multikueue=True)
    queued = server()
    queued["metadata"]["labels"] = {QUEUE_NAME_LABEL: "q"}
    out = applied(queued, multikueue_view(), manager)
    assert out["spec"]["control"] == {"paused": True, "managedBy": MULTIKUEUE_CONTROLLER}


def test_the_webhook_configurations_cover_the_declared_kinds() -> None:
    kinds = declaring([DeclarativeKindSpec.model_validate(TRAINER)])
    mutating, validating = webhook_configurations(
        "mkq-system", url="https://x", frameworks=["batch/job"], declared=kinds.declared
    )
    rules = [w["rules"][0] for w in mutating["webhooks"]]
    assert {"apiGroups": ["example.com"], "apiVersions": ["v1"]}.items() <= rules[0].items()
    assert rules[0]["resources"] == ["trainers"]
    assert any(w["name"] == "vtrainer.mkq.dev" for w in validating["webhooks"])
