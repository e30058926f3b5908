"""Which webhooks a request calls: kube-apiserver's rules, selectors and match policy."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.admission import CREATE, DELETE, UPDATE, Attributes
from kubesim.resources import Registry, ResourceType
from kubesim.webhook_matching import Hook, invocation, parse
from kubesim.webhooks import denied

Obj = dict[str, Any]
REGISTRY = Registry()
PODS = REGISTRY.lookup("", "v1", "pods")
NAMESPACES = REGISTRY.lookup("", "v1", "namespaces")
NODES = REGISTRY.lookup("", "v1", "nodes")
WIDGETS = ResourceType(
    group="example.com",
    versions=("v1", "v2"),
    plural="widgets",
    kind="Widget",
    namespaced=True,
    singular="widget",
    storage_version="v1",
    from_crd=True,
)


def _hook(rule: Obj, **fields: Any) -> Hook:
    configuration = {
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "c"},
        "webhooks": [
            {
                "name": "w.example.com",
                "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], **rule}],
                "clientConfig": {"url": "https://127.0.0.1/"},
                **fields,
            }
        ],
    }
    return parse([configuration])[0]


def _request(
    resource: ResourceType | None,
    *,
    operation: str = CREATE,
    version: str = "v1",
    subresource: str = "",
    namespace: str = "ns",
    obj: Obj | None = None,
    old: Obj | None = None,
) -> Attributes:
    assert resource is not None
    return Attributes(
        operation,
        resource,
        version,
        subresource,
        namespace,
        "x",
        obj if obj is not None or operation == DELETE else {"metadata": {}},
        old,
        {},
        False,
    )


@pytest.mark.parametrize(
    ("resources", "subresource", "called"),
    [
        (["pods"], "", True),
        (["pods"], "status", False),
        (["pods/status"], "status", True),
        (["pods/status"], "", False),
        (["*"], "", True),
        (["*"], "status", False),
        (["*/*"], "status", True),
        (["*/status"], "status", True),
        (["pods/*"], "binding", True),
        (["nodes"], "", False),
    ],
)
def test_resources_and_subresources(resources: list[str], subresource: str, called: bool) -> None:
    hook = _hook({"resources": resources})
    assert (invocation(hook, _request(PODS, subresource=subresource), None) is not None) is called


def test_operations_groups_and_versions_must_all_match() -> None:
    hook = _hook({"resources": ["pods"], "operations": ["UPDATE"], "apiGroups": [""]})
    assert invocation(hook, _request(PODS), None) is None
    assert invocation(hook, _request(PODS, operation=UPDATE, old={"metadata": {}}), None)
    batch_only = _hook({"resources": ["*"], "apiGroups": ["batch"]})
    assert invocation(batch_only, _request(PODS), None) is None


def test_scope_treats_a_namespace_as_cluster_scoped() -> None:
    namespaced = _hook({"resources": ["*"], "scope": "Namespaced"})
    cluster = _hook({"resources": ["*"], "scope": "Cluster"})
    # a Namespace's own requests carry its name as their namespace, yet it is cluster-scoped
    own = _request(NAMESPACES, namespace="ns")
    assert invocation(namespaced, own, None) is None
    assert invocation(cluster, own, None) is not None
    assert invocation(namespaced, _request(PODS), None) is not None
    assert invocation(cluster, _request(NODES, namespace=""), None) is not None


def test_equivalent_match_calls_at_another_served_version() -> None:
    rule = {"resources": ["widgets"], "apiVersions": ["v2"]}
    equivalent = invocation(_hook(rule), _request(WIDGETS), None)
    assert equivalent is not None and equivalent.version == "v2"
    assert invocation(_hook(rule, matchPolicy="Exact"), _request(WIDGETS), None) is None


def test_object_selector_takes_the_new_or_the_old_labels() -> None:
    hook = _hook({"resources": ["pods"]}, objectSelector={"matchLabels": {"a": "b"}})
    labelled = {"metadata": {"labels": {"a": "b"}}}
    plain = {"metadata": {}}
    assert invocation(hook, _request(PODS, obj=labelled), None)
    assert invocation(hook, _request(PODS, obj=plain), None) is None
    assert invocation(hook, _request(PODS, operation=UPDATE, obj=plain, old=labelled), None)
    assert invocation(hook, _request(PODS, operation=DELETE, old=labelled), None)
    absent = _hook(
        {"resources": ["pods"]},
        objectSelector={"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]},
    )
    assert invocation(absent, _request(PODS, operation=DELETE, old=plain), None)


def test_namespace_selector_reads_the_namespace_and_spares_cluster_scoped_objects() -> None:
    hook = _hook({"resources": ["*"]}, namespaceSelector={"matchLabels": {"team": "a"}})
    team_a = {"metadata": {"labels": {"team": "a"}}}
    assert invocation(hook, _request(PODS), team_a)
    assert invocation(hook, _request(PODS), {"metadata": {}}) is None
    assert invocation(hook, _request(NODES, namespace=""), None)
    # a Namespace being created is matched by its own labels
    assert invocation(hook, _request(NAMESPACES, obj=team_a), None)


def test_hooks_are_ordered_by_configuration_name_then_position() -> None:
    def configuration(name: str, hooks: list[str]) -> Obj:
        return {"metadata": {"name": name}, "webhooks": [{"name": h} for h in hooks]}

    hooks = parse([configuration("b", ["b1", "b2"]), configuration("a", ["a1"])])
    assert [h.name for h in hooks] == ["a1", "b1", "b2"]


def test_a_denial_is_at_least_400_and_names_the_webhook() -> None:
    assert denied("w", None).code == 400
    assert denied("w", {"code": 200, "message": "m"}).code == 400
    error = denied("w", {"code": 409, "reason": "Conflict"})
    assert (error.code, error.reason) == (409, "Conflict")
    assert error.message == 'admission webhook "w" denied the request: Conflict'
