"""Kubeflow's jobs: the training operator's v1 kinds (kubeflow.org/v1, its CRDs in
manifests/base/crds/ of github.com/kubeflow/training-operator) and the MPI operator's MPIJob
(kubeflow.org/v2beta1, manifests/base/kubeflow.org_mpijobs.yaml of
github.com/kubeflow/mpi-operator), which share the run policy and replica specs: the fields
Kueue's integrations read, the others each CRD has listed so a misspelt key is refused."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kueue_api.models.base import CoreModel, Int32, StrictBool, StrictStr
from kueue_api.models.core import PodTemplateSpec
from kueue_api.models.meta import ObjectMeta

__all__ = [
    "KUBEFLOW_MODELS",
    "JAXJob",
    "KubeflowJobModel",
    "MPIJob",
    "PaddleJob",
    "PyTorchJob",
    "ReplicaSpec",
    "RunPolicy",
    "TFJob",
    "XGBoostJob",
]


class ReplicaSpec(CoreModel):
    """One replica type's pods: how many, and their template."""

    other_fields = frozenset({"restartPolicy"})

    replicas: Int32 | None = Field(default=None, ge=0)
    template: PodTemplateSpec


class RunPolicy(CoreModel):
    other_fields = frozenset(
        {
            "activeDeadlineSeconds",
            "backoffLimit",
            "cleanPodPolicy",
            "schedulingPolicy",
            "ttlSecondsAfterFinished",
        }
    )

    suspend: StrictBool | None = None
    managed_by: StrictStr | None = None


class _Spec(CoreModel):
    run_policy: RunPolicy = Field(default_factory=RunPolicy)


class PyTorchJobSpec(_Spec):
    other_fields = frozenset({"elasticPolicy", "nprocPerNode"})

    pytorch_replica_specs: dict[str, ReplicaSpec]


class TFJobSpec(_Spec):
    other_fields = frozenset({"enableDynamicWorker", "successPolicy"})

    tf_replica_specs: dict[str, ReplicaSpec]


class JAXJobSpec(_Spec):
    other_fields = frozenset()

    jax_replica_specs: dict[str, ReplicaSpec]


class PaddleJobSpec(_Spec):
    other_fields = frozenset({"elasticPolicy"})

    paddle_replica_specs: dict[str, ReplicaSpec]


class XGBoostJobSpec(_Spec):
    other_fields = frozenset()

    xgb_replica_specs: dict[str, ReplicaSpec]


class MPIJobSpec(_Spec):
    other_fields = frozenset(
        {
            "launcherCreationPolicy",
            "mpiImplementation",
            "runLauncherAsWorker",
            "slotsPerWorker",
            "sshAuthMountPath",
        }
    )

    mpi_replica_specs: dict[str, ReplicaSpec]


class KubeflowJobModel(CoreModel):
    """What the kinds share; each names its kind and its spec (`spec.runPolicy`), and its
    API version when not the training operator's v1."""

    other_fields = frozenset()

    api_version: Literal["kubeflow.org/v1", "kubeflow.org/v2beta1"] = "kubeflow.org/v1"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: Any
    status: dict[str, Any] = Field(default_factory=dict)


class PyTorchJob(KubeflowJobModel):
    kind: Literal["PyTorchJob"] = "PyTorchJob"
    spec: PyTorchJobSpec


class TFJob(KubeflowJobModel):
    kind: Literal["TFJob"] = "TFJob"
    spec: TFJobSpec


class JAXJob(KubeflowJobModel):
    kind: Literal["JAXJob"] = "JAXJob"
    spec: JAXJobSpec


class PaddleJob(KubeflowJobModel):
    kind: Literal["PaddleJob"] = "PaddleJob"
    spec: PaddleJobSpec


class XGBoostJob(KubeflowJobModel):
    kind: Literal["XGBoostJob"] = "XGBoostJob"
    spec: XGBoostJobSpec


class MPIJob(KubeflowJobModel):
    api_version: Literal["kubeflow.org/v2beta1"] = "kubeflow.org/v2beta1"
    kind: Literal["MPIJob"] = "MPIJob"
    spec: MPIJobSpec


# Each kind's model, and the field of its spec that holds its replica specs.
KUBEFLOW_MODELS: dict[str, tuple[type[KubeflowJobModel], str]] = {
    "PyTorchJob": (PyTorchJob, "pytorch_replica_specs"),
    "TFJob": (TFJob, "tf_replica_specs"),
    "JAXJob": (JAXJob, "jax_replica_specs"),
    "PaddleJob": (PaddleJob, "paddle_replica_specs"),
    "XGBoostJob": (XGBoostJob, "xgb_replica_specs"),
    "MPIJob": (MPIJob, "mpi_replica_specs"),
}
