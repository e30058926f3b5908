"""The Kueue setup both backends apply: deploy/examples/, cut down to the e2e workers."""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Mapping
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


def token_secret_kubeconfig(
    worker: str, server: str, secret_data: Mapping[str, str]
) -> dict[str, Any]:
    """The kubeconfig the manager is given for a worker, built from the data of the
    mkq-manager-access token Secret (README, "Deploying on real clusters", step 4)."""
    token = base64.b64decode(secret_data["token"]).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": worker,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": secret_data["ca.crt"],
                },
            }
        ],
        "users": [{"name": "mkq-manager-access", "user": {"token": token}}],
        "contexts": [
            {"name": worker, "context": {"cluster": worker, "user": "mkq-manager-access"}}
        ],
        "current-context": worker,
    }


def run_command(*args: str, stdin: str | None = None, timeout: float = 600) -> str:
    """Run a command (kubectl, kind, docker); its stderr goes into the error when it fails."""
    result = subprocess.run(
        list(args), input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result.stdout
