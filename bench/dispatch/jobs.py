"""The Job the dispatch benchmarks submit: one pod of `cpu` that runs `run_for` on a kubesim or
KWOK node (the annotation both read: kubesim, and mkq/realk8s/kwok-stages.yaml)."""

from __future__ import annotations

from typing import Any

from kueue_api.jobs.base import QUEUE_NAME_LABEL


def bench_job(
    index: int, run_for: str, cpu: str, *, namespace: str, queue: str, spec: dict[str, Any]
) -> dict[str, Any]:
    """Job `bench-<index>` in `namespace`, queued to `queue`; `spec` adds fields to its spec."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"bench-{index:05d}",
            "namespace": namespace,
            "labels": {QUEUE_NAME_LABEL: queue},
        },
        "spec": {
            **spec,
            "template": {
                "metadata": {"annotations": {"kubesim.mkq.dev/run-for": run_for}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                    ],
                },
            },
        },
    }
