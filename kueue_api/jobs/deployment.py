"""Deployment (apps/v1), Kueue's pkg/controller/jobs/deployment: no reconciler of its own.

Kueue's webhook labels the pod template of a queued Deployment with its queue name, the
managed label and its WorkloadPriorityClass, and marks it as suspended by the `deployment`
framework. Each pod the ReplicaSet creates is then a plain queued pod: gated by the pod webhook,
a single-pod Workload of its own, released when admitted (kueue_api.jobs.pod). Scaling up makes
more such pods; scaling down or deleting the Deployment deletes pods, whose Workloads go with
them (they are owned by their pod). Kueue has no MultiKueue adapter for it.
"""

from __future__ import annotations

from kueue_api.api_resources import ResourceType
from kueue_api.jobs import checks
from kueue_api.jobs.base import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL, JsonObject, labels_of
from kueue_api.jobs.pod import MANAGED_LABEL
from kueue_api.jobs.pod_parent import (
    UpdateContext,
    mark_template,
    queue_name_problems,
    serving_update_problems,
)


class Deployment:
    """The Deployment kind."""

    resource = ResourceType("apps", "v1", "deployments", "Deployment", True)
    framework = "deployment"
    multikueue_refusal: str | None = (
        "Kueue's MultiKueue has no adapter for Deployment (pkg/controller/jobs/deployment has "
        "none), so the manager does not dispatch it: apply it, with its queue-name label, to "
        "a worker cluster, whose agent queues each of its pods"
    )

    def template_defaults(self, obj: JsonObject) -> JsonObject:
        """Webhook.Default: the template gets the queue name and priority class of the
        Deployment (replacing the template's own) and the managed label."""
        labels = labels_of(obj)
        added = {MANAGED_LABEL: "true"}
        if labels.get(QUEUE_NAME_LABEL):
            added[QUEUE_NAME_LABEL] = labels[QUEUE_NAME_LABEL]
        if labels.get(PRIORITY_CLASS_LABEL):
            added[PRIORITY_CLASS_LABEL] = labels[PRIORITY_CLASS_LABEL]
        return mark_template(obj, self.framework, added)

    def create_problems(self, obj: JsonObject) -> list[str]:
        return queue_name_problems(obj)

    def update_problems(
        self, old: JsonObject, new: JsonObject, context: UpdateContext
    ) -> list[str]:
        return serving_update_problems(old, new)

    def parent_workload_name(self, obj: JsonObject) -> str | None:
        return None

    def check(self, obj: JsonObject) -> None:
        spec = checks.require_mapping(obj.get("spec"), "spec")
        checks.int32(spec.get("replicas", 1), "spec.replicas")
        checks.require_mapping(spec.get("selector"), "spec.selector")
        checks.pod_template(spec.get("template"), "spec.template")
