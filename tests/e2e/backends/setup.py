"""The Kueue setup both backends apply: deploy/examples/, cut down to the e2e workers."""

from __future__ import annotations

from typing import Any

from mkq.demo.manifests import EXAMPLES, read_documents


def manager_setup(workers: tuple[str, ...]) -> list[dict[str, Any]]:
    """deploy/examples/manager-setup.yaml, with the MultiKueue objects cut down to `workers`."""
    documents = []
    for obj in read_documents(EXAMPLES / "manager-setup.yaml"):
        kind, name = obj["kind"], obj["metadata"]["name"]
        if kind == "MultiKueueCluster" and name not in workers:
            continue
        if kind == "MultiKueueConfig":
            obj["spec"]["clusters"] = [c for c in obj["spec"]["clusters"] if c in workers]
        documents.append(obj)
    return documents
