"""Kubeflow's v1 training jobs (kubeflow.org/v1: PyTorchJob, TFJob, JAXJob, PaddleJob,
XGBoostJob), one class for the five as Kueue has one package for them
(pkg/controller/jobs/kubeflow/kubeflowjob, with a small JobControl per kind in
pkg/controller/jobs/kubeflow/jobs/<kind>).

A job holds a map of replica specs (`spec.<field>: {Master: {replicas, template}, ...}`); its
Workload has one podSet per replica type present, in the kind's fixed order (a map has none),
named after the type in lower case, of `replicas` pods (1 when unset). Its suspend flag and
managedBy live in `spec.runPolicy`; it is finished when its Succeeded or Failed condition is
true, its pods ready while Running is.
"""

from __future__ import annotations

from collections.abc import Sequence

from kueue_api.api_resources import ResourceType
from kueue_api.jobs import checks
from kueue_api.jobs.base import (
    Finish,
    JsonObject,
    PodSetInfo,
    QueueLabelledJob,
    merge_into_template,
    name_of,
    restore_template,
    true_condition,
)
from kueue_api.jsoncopy import json_copy
from kueue_api.pod_sets import pod_set_template, topology_request

GROUP = "kubeflow.org"
VERSION = "v1"
# Labels the training operator puts on every pod of a job (kftraining.JobNameLabel,
# OperatorNameLabel, ReplicaIndexLabel).
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"


class KubeflowJob(QueueLabelledJob):
    """One Kubeflow v1 job kind: its name, where its replica specs live and their order."""

    suspend_path = ("spec", "runPolicy", "suspend")
    managed_by_path = ("spec", "runPolicy", "managedBy")
    pod_owner_label = JOB_NAME_LABEL

    def __init__(
        self,
        kind: str,
        replica_specs_field: str,
        replica_types: tuple[str, ...],
        *,
        version: str = VERSION,
        operator_name: str | None = None,
        own_controller: str | None = None,
    ) -> None:
        """`replica_types` in Kueue's order (JobControl.OrderedReplicaTypes). `version`,
        `operator_name` and `own_controller` are for the MPI operator's MPIJob
        (kubeflow.org/v2beta1), which shares the shape, labels and conditions but not the
        training operator's API version, the name it puts on its pods, or its managedBy."""
        self.own_controller = own_controller
        self.resource = ResourceType(GROUP, version, f"{kind.lower()}s", kind, True)
        self.framework = f"{GROUP}/{kind.lower()}"
        self.replica_specs_field = replica_specs_field
        self.replica_types = replica_types
        # The training operator names itself on the pods per kind ("pytorchjob-controller").
        self.operator_name = operator_name or f"{kind.lower()}-controller"
        self.pod_priority_class_field = (
            f"spec.{replica_specs_field}[*].template.spec.priorityClassName"
        )

    def pod_priority_class_name(self, job: JsonObject) -> str | None:
        """KubeflowJob.PriorityClass: the run policy's scheduling priority class, else the
        first the replica templates name, in the kind's order."""
        scheduling = (
            ((job.get("spec") or {}).get("runPolicy") or {}).get("schedulingPolicy")
        ) or {}
        return scheduling.get("priorityClass") or super().pod_priority_class_name(job)

    def pod_selector(self, job: JsonObject) -> str:
        """Kueue's PodLabelSelector: the job's name and the kind's operator, since every
        Kubeflow kind labels its pods with the same job-name label."""
        return f"{JOB_NAME_LABEL}={name_of(job)},{OPERATOR_NAME_LABEL}={self.operator_name}"

    def _replica_specs(self, job: JsonObject) -> dict[str, JsonObject]:
        return dict((job.get("spec") or {}).get(self.replica_specs_field) or {})

    def ordered_replica_types(self, job: JsonObject) -> list[str]:
        """The replica types the job has, in the kind's order (KubeflowJob.OrderedReplicaTypes):
        the order of its podSets, and of admission's placement."""
        present = self._replica_specs(job)
        return [name for name in self.replica_types if present.get(name) is not None]

    def check(self, job: JsonObject) -> None:
        spec = checks.require_mapping(job.get("spec"), "spec")
        at = f"spec.{self.replica_specs_field}"
        replicas = checks.require_mapping(spec.get(self.replica_specs_field), at)
        for name, entry in replicas.items():
            field = f"{at}.{name}"
            if entry is None:
                continue  # a null replica spec is no podSet, as in Kueue
            if name not in self.replica_types:
                # The operator's webhook refuses it; Kueue would leave it out of the podSets.
                raise checks.ManifestError(
                    field,
                    f"{self.resource.kind} has no replica type {name!r} (one of "
                    f"{', '.join(self.replica_types)})",
                )
            found = checks.require_mapping(entry, field)
            checks.int32(found.get("replicas", 1), f"{field}.replicas")
            checks.pod_template(found.get("template"), f"{field}.template")
        if not self.ordered_replica_types(job):
            raise checks.ManifestError(at, "at least one replica type is required")

    def pod_sets(self, job: JsonObject) -> list[JsonObject]:
        """KubeflowJob.PodSets: one per replica type present, in order, with the topology
        request its template asks (pods indexed by the operator's replica-index label)."""
        specs = self._replica_specs(job)
        pod_sets = []
        for name in self.ordered_replica_types(job):
            template = pod_set_template(specs[name].get("template") or {})
            replicas = specs[name].get("replicas")
            pod_set: JsonObject = {
                "name": name.lower(),
                "count": 1 if replicas is None else int(replicas),
                "template": template,
            }
            request = topology_request(template, REPLICA_INDEX_LABEL)
            if request is not None:
                pod_set["topologyRequest"] = request
            pod_sets.append(pod_set)
        return pod_sets

    def is_active(self, job: JsonObject) -> bool:
        statuses = ((job.get("status") or {}).get("replicaStatuses") or {}).values()
        return any(int(s.get("active") or 0) > 0 for s in statuses)

    def has_started(self, job: JsonObject) -> bool:
        status = job.get("status") or {}
        statuses = (status.get("replicaStatuses") or {}).values()
        return bool(status.get("startTime")) or any(
            int(s.get("active") or 0) + int(s.get("succeeded") or 0) > 0 for s in statuses
        )

    def pods_ready(self, job: JsonObject) -> bool:
        """Kueue's rule: the job's Running condition is true."""
        return true_condition(job, "Running") is not None

    def finished(self, job: JsonObject) -> Finish | None:
        found = true_condition(job, "Succeeded", "Failed")
        if found is None:
            return None
        return Finish(found["type"] == "Succeeded", str(found.get("message", "")))

    def run(self, job: JsonObject, infos: Sequence[PodSetInfo]) -> JsonObject:
        result = self.resumed(job)
        names = self.ordered_replica_types(result)
        if len(infos) != len(names):
            raise ValueError(
                f"a {self.resource.kind} has {len(names)} podSets, admission {len(infos)}"
            )
        specs = result["spec"][self.replica_specs_field]
        for name, info in zip(names, infos, strict=True):
            specs[name]["template"] = merge_into_template(specs[name].get("template") or {}, info)
        return result

    def restore(self, job: JsonObject, original_pod_sets: Sequence[JsonObject]) -> JsonObject:
        result = json_copy(job)
        names = self.ordered_replica_types(result)
        if len(original_pod_sets) != len(names):
            return result  # Kueue skips a restore that does not match, too
        specs = result["spec"][self.replica_specs_field]
        for name, original in zip(names, original_pod_sets, strict=True):
            specs[name]["template"] = restore_template(
                specs[name].get("template") or {}, original.get("template") or {}
            )
        return result


# Each kind's replica types in Kueue's order (OrderedReplicaTypes of
# pkg/controller/jobs/kubeflow/jobs/<kind>/<kind>_controller.go).
PYTORCH_JOB = KubeflowJob("PyTorchJob", "pytorchReplicaSpecs", ("Master", "Worker"))
TF_JOB = KubeflowJob("TFJob", "tfReplicaSpecs", ("Chief", "Master", "PS", "Worker", "Evaluator"))
JAX_JOB = KubeflowJob("JAXJob", "jaxReplicaSpecs", ("Worker",))
PADDLE_JOB = KubeflowJob("PaddleJob", "paddleReplicaSpecs", ("Master", "Worker"))
XGBOOST_JOB = KubeflowJob("XGBoostJob", "xgbReplicaSpecs", ("Master", "Worker"))
KUBEFLOW_JOBS = (PYTORCH_JOB, TF_JOB, JAX_JOB, PADDLE_JOB, XGBOOST_JOB)
