"""The MPI operator's MPIJob (kubeflow.org/v2beta1), as Kueue's integration reads it
(pkg/controller/jobs/mpijob/mpijob_controller.go).

An MPIJob has the shape of a Kubeflow v1 job (kueue_api.jobs.kubeflow): `spec.runPolicy` holds
its suspend flag, managedBy and scheduling policy, `spec.mpiReplicaSpecs` its replica types,
its conditions say Succeeded, Failed and Running, and its pods carry the same
training.kubeflow.org labels. So it is one more KubeflowJob, with its own API version and the
MPI operator's name on its pods, rather than a copy of the class:

- podSets: Launcher then Worker (Kueue's orderedReplicaTypes), each of `replicas` pods (1 when
  unset), a null replica spec left out; `runLauncherAsWorker` changes no count (Kueue's
  podsCount reads `replicas` alone);
- priority class: `runPolicy.schedulingPolicy.priorityClass`, else the launcher's template's,
  else the worker's (MPIJob.PriorityClass);
- managedBy: `kubeflow.org/mpi-operator` is the operator's own name, as good as none: a
  MultiKueue queue still takes such a job (MPIJob.CanDefaultManagedBy);
- pods: `training.kubeflow.org/job-name=<name>,training.kubeflow.org/operator-name=mpi-operator`
  (MPIJob.PodLabelSelector).

Kueue's webhook also gives the worker template a pod-index offset for topology-aware
scheduling when the launcher runs as a worker; this project has no pod-index offsets in its TAS
placement, so that defaulting has nothing to feed here.
"""

from __future__ import annotations

from kueue_api.jobs.kubeflow import KubeflowJob

VERSION = "v2beta1"
# kfmpi.OperatorName: the operator-name label the MPI operator puts on its pods.
OPERATOR_NAME = "mpi-operator"
# kfmpi.KubeflowJobController: the runPolicy.managedBy naming the MPI operator itself.
MPI_OPERATOR_CONTROLLER = "kubeflow.org/mpi-operator"

MPI_JOB = KubeflowJob(
    "MPIJob",
    "mpiReplicaSpecs",
    ("Launcher", "Worker"),
    version=VERSION,
    operator_name=OPERATOR_NAME,
    own_controller=MPI_OPERATOR_CONTROLLER,
)
