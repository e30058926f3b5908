"""The Jobs the tests submit: the demo's manifests, made to run on a real kubelet too."""

from __future__ import annotations

import secrets
from typing import Any

from mkq.demo.workload_mix import Route, job_manifest

# A real container that lives as long as kubesim's run-for says, so kind runs it the same way.
IMAGE = "busybox:1.36"


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


def job(
    name: str,
    *,
    namespace: str = "team-a",
    pods: int = 1,
    cpu: str = "1",
    seconds: int = 1,
    priority: str = "low",
    route: Route = "rest",
    rack: bool = False,
) -> dict[str, Any]:
    manifest = job_manifest(
        namespace,
        name,
        pods=pods,
        requests={"cpu": cpu, "memory": "1Gi"},
        run_for=f"{seconds}s",
        priority=priority,
        route=route,
        rack=rack,
    )
    container = manifest["spec"]["template"]["spec"]["containers"][0]
    container["image"] = IMAGE
    container["command"] = ["sleep", str(seconds)]
    container.pop("args", None)
    return manifest


def completions(manifest: dict[str, Any]) -> int:
    return int(manifest["spec"]["completions"])
