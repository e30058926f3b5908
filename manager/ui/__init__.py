"""The dashboard, served by the manager at /ui: worker clusters with their health and their
ClusterQueues' usage against quota, the queues, the workloads with their state and cluster and,
per workload, its dispatch history; live over Server-Sent Events, with plots drawn in the
browser from what it has received. Plain HTML, CSS and JavaScript shipped in the package (no
build step, nothing fetched from elsewhere at run time)."""

from manager.ui.routes import router

__all__ = ["router"]
