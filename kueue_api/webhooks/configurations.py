"""The Mutating- and ValidatingWebhookConfigurations of a webhook server, built in one place:
deploy/base/agent/webhooks.yaml is this module's output for the in-cluster Service (a test
compares them), and the demo and the tests install it for a server reached by URL.

Scoped as Kueue's (config/components/webhook/manifests.yaml): jobs and pods at creation are
mutated with failurePolicy Fail (a Job must not start unqueued because the webhook was down),
Kueue's objects and job updates are validated; namespaces `kube-system` and the agent's own are
left out, so the control plane and the agent never wait on the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kueue_api.api_resources import ResourceType
from kueue_api.jobs import KINDS, POD_PARENT_KINDS, JobKind

JsonObject = dict[str, Any]

MUTATING_NAME = "mkq-agent-mutating"
VALIDATING_NAME = "mkq-agent-validating"
MUTATE_PATH = "/mutate"
VALIDATE_PATH = "/validate"
TIMEOUT_SECONDS = 10

# (webhook name, apiGroups, apiVersions, resources, framework): every job kind, and pods.
_RESOURCES: tuple[tuple[ResourceType, str], ...] = (
    *((kind.resource, kind.framework) for kind in KINDS),
    *((kind.resource, kind.framework) for kind in POD_PARENT_KINDS),
)


def _mutated_entry(resource: ResourceType, framework: str) -> tuple[str, str, str, str, str]:
    name = f"m{resource.kind.lower()}.mkq.dev"
    return (name, resource.group, resource.version, resource.plural, framework)


_MUTATED = (
    *(_mutated_entry(resource, framework) for resource, framework in _RESOURCES),
    ("mpod.mkq.dev", "", "v1", "pods", "pod"),
)
# Kinds Kueue mutates on update too: their pod template is marked again (a new template from
# `kubectl apply` must not roll out unqueued pods).
_MUTATED_ON_UPDATE = frozenset(kind.framework for kind in POD_PARENT_KINDS)
# The pods the pod webhook sees: those that ask for a queue, and those a pod parent's marked
# template made (labelled managed there, kueue_api.jobs.statefulset), in two disjoint entries
# since one objectSelector cannot say "or".
_POD_SELECTORS = (
    ("mpod.mkq.dev", [{"key": "kueue.x-k8s.io/queue-name", "operator": "Exists"}]),
    (
        "mpod-managed.mkq.dev",
        [
            {"key": "kueue.x-k8s.io/queue-name", "operator": "DoesNotExist"},
            {"key": "kueue.x-k8s.io/managed", "operator": "Exists"},
        ],
    ),
)
# Every framework the configurations can cover.
ALL_FRAMEWORKS = tuple(entry[4] for entry in _MUTATED)
_KUEUE_RESOURCES = (
    "clusterqueues",
    "cohorts",
    "localqueues",
    "resourceflavors",
    "workloads",
    "workloadpriorityclasses",
    "admissionchecks",
    "topologies",
)


# Kueue's visibility API, which the agent serves beside the webhooks (worker_agent.visibility).
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSION = "v1beta2"
VISIBILITY_API_SERVICE = f"{VISIBILITY_VERSION}.{VISIBILITY_GROUP}"


def visibility_api_service(
    service: tuple[str, str], *, port: int = 443, ca_bundle: str | None = None
) -> JsonObject:
    """The APIService through which kube-apiserver serves the visibility API from the agent
    behind `service` (namespace, name), as Kueue's config/components/visibility registers it,
    but with the agent's certificate verified against `ca_bundle` where Kueue skips it."""
    namespace, name = service
    spec: JsonObject = {
        "group": VISIBILITY_GROUP,
        "version": VISIBILITY_VERSION,
        "groupPriorityMinimum": 100,
        "versionPriority": 100,
        "service": {"namespace": namespace, "name": name, "port": port},
    }
    if ca_bundle:
        spec["caBundle"] = ca_bundle
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": VISIBILITY_API_SERVICE},
        "spec": spec,
    }


def external_service(service: tuple[str, str], host: str) -> JsonObject:
    """A Service that names `host` (an ExternalName), for an agent outside the cluster (the
    demo, the tests): kube-apiserver's aggregator reaches an ExternalName Service at that host
    and the APIService's port, and verifies the certificate for `<name>.<namespace>.svc`."""
    namespace, name = service
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"type": "ExternalName", "externalName": host},
    }


def _client_config(
    path: str, *, url: str | None, service: tuple[str, str] | None, ca_bundle: str | None
) -> JsonObject:
    config: JsonObject = {}
    if url is not None:
        config["url"] = url.rstrip("/") + path
    elif service is not None:
        namespace, name = service
        config["service"] = {"namespace": namespace, "name": name, "path": path, "port": 443}
    if ca_bundle:
        config["caBundle"] = ca_bundle
    return config


def _namespace_selector(own_namespace: str) -> JsonObject:
    return {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": sorted({"kube-system", own_namespace}),
            }
        ]
    }


def webhook_configurations(
    own_namespace: str,
    *,
    url: str | None = None,
    service: tuple[str, str] | None = None,
    ca_bundle: str | None = None,
    frameworks: Sequence[str] = ALL_FRAMEWORKS,
    owner: str = "mkq-agent",
    declared: Sequence[JobKind] = (),
) -> list[JsonObject]:
    """The two configurations (`<owner>-mutating`, `<owner>-validating`), the server reached at
    `url` or through `service` (namespace, name); `declared`: the kinds a Configuration
    declares (integrations.declarativeKinds), covered whatever `frameworks` says."""
    mutated = (
        *(_mutated_entry(kind.resource, kind.framework) for kind in declared),
        *_MUTATED,
    )
    frameworks = [*frameworks, *(kind.framework for kind in declared)]
    selector = _namespace_selector(own_namespace)

    def webhook(name: str, path: str, rules: list[JsonObject], policy: str) -> JsonObject:
        return {
            "name": name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": _client_config(path, url=url, service=service, ca_bundle=ca_bundle),
            "failurePolicy": policy,
            "matchPolicy": "Equivalent",
            "namespaceSelector": selector,
            "rules": rules,
            "sideEffects": "None",
            "timeoutSeconds": TIMEOUT_SECONDS,
        }

    def rule(group: str, version: str, resource: str, *operations: str) -> JsonObject:
        return {
            "apiGroups": [group],
            "apiVersions": [version],
            "operations": list(operations),
            "resources": [resource],
        }

    mutating = [
        webhook(
            name,
            MUTATE_PATH,
            [
                rule(
                    group,
                    version,
                    resource,
                    *(("CREATE", "UPDATE") if framework in _MUTATED_ON_UPDATE else ("CREATE",)),
                )
            ],
            "Fail",
        )
        for name, group, version, resource, framework in mutated
        if framework in frameworks and framework != "pod"
    ]
    if "pod" in frameworks:
        # Only pods that Kueue manages: the pods a Job controller creates (and every other
        # pod) are never held up by this webhook, even when it is down.
        for name, expressions in _POD_SELECTORS:
            entry = webhook(name, MUTATE_PATH, [rule("", "v1", "pods", "CREATE")], "Fail")
            entry["objectSelector"] = {"matchExpressions": expressions}
            mutating.append(entry)
    validating = [
        webhook(
            "vkueue.mkq.dev",
            VALIDATE_PATH,
            [rule("kueue.x-k8s.io", "v1beta2", r, "CREATE", "UPDATE") for r in _KUEUE_RESOURCES],
            "Fail",
        )
    ]
    validating += [
        webhook(
            "v" + name[1:],
            VALIDATE_PATH,
            [rule(group, version, resource, "CREATE", "UPDATE")],
            "Fail",
        )
        for name, group, version, resource, framework in mutated
        if framework in frameworks and framework != "pod"
    ]
    api = "admissionregistration.k8s.io/v1"
    return [
        {
            "apiVersion": api,
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": f"{owner}-mutating"},
            "webhooks": mutating,
        },
        {
            "apiVersion": api,
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": f"{owner}-validating"},
            "webhooks": validating,
        },
    ]
