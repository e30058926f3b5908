"""An emulated Kubernetes cluster: an API server with real Kubernetes semantics on a loopback
port, plus simulated nodes, scheduler, kubelet, job controller and garbage collector.

    from kubesim import ClusterSpec, run_clusters

    async with run_clusters([ClusterSpec(name="w1")]) as clusters:
        ...  # clusters[0].kubeconfig_path works with kubectl and kubernetes-asyncio
"""

from .cluster import ClusterSpec, ClusterStartError, RunningCluster, run_clusters, start_cluster
from .jobset_controller import JOBSET_CRD
from .kubelet import EXIT_CODE, RUN_FOR

__all__ = [
    "EXIT_CODE",
    "JOBSET_CRD",
    "RUN_FOR",
    "ClusterSpec",
    "ClusterStartError",
    "RunningCluster",
    "run_clusters",
    "start_cluster",
]
