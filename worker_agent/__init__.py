"""The worker agent: runs in each worker cluster and admits workloads with the engine.

Layout (one idea per module):
- `resources`, `kube_client`: generic REST access (kubernetes-asyncio's ApiClient, plain JSON).
- `cache`, `informer`, `informers`: list+watch into local caches (bookmarks, 410 relist,
  backoff); `workqueue` + `controllers.runner`: de-duplicating, level-based reconciles.
- `writer`: conflict-retried updates (status subresource) whose results feed the caches.
- `engine_feed`, `scheduling`, `queue_status`: the engine's state rebuilt from the caches,
  event-driven cycles on a worker thread, admissions/evictions/pending messages written back,
  ClusterQueue and LocalQueue status.
- job kinds are kueue_api.jobs (one module per kind, shared with the manager);
  `controllers.jobs` / `controllers.pod_groups` run them; `controllers.workloads`
  covers queue blockers, deactivation and orphans; `controllers.topology_ungater` releases
  TAS pods onto their domains.
- `reporter` (to the manager), `metrics`, `health`, `leader`, `events`, and `agent`, which
  wires them together (`mkq agent run` is its command line).
"""
