"""Bring one emulated worker of docker-compose.yaml into service, then exit.

1. Wait for `mkq kubesim serve` to write the worker's kubeconfig into the shared volume.
2. Apply the worker's Kueue setup (flavors, cohorts, queues) to it, as `kubectl apply` would
   create them; objects that already exist are left alone, so a restart is harmless.
3. Register the worker with the manager (`POST /api/v1/clusters`), with the kubeconfig's server
   rewritten to the address the manager reaches the worker at, and write the agent token the
   manager answers with next to the kubeconfig, for the worker's agent to read.

It needs only the standard library and PyYAML, both in the mkq image:
    python bootstrap_worker.py --name worker-1 --kubeconfig /var/lib/mkq/worker-1.kubeconfig \
        --setup /opt/mkq/deploy/examples/worker-cpu-setup.yaml \
        --server-for-manager http://worker-1-api:6443 --manager-url http://manager:8080
Reads the users' API token from MKQ_API_TOKEN. Exit 2 with a message on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]


class BootstrapError(Exception):
    """A step failed; the message says which and why."""


def plural_of(kind: str) -> str:
    """The resource name of a kind, as Kubernetes forms it for the kinds in a Kueue setup."""
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    if lower.endswith("s"):
        return lower + "es"
    return lower + "s"


def collection_path(obj: Obj) -> str:
    api_version = str(obj.get("apiVersion", ""))
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    namespace = (obj.get("metadata") or {}).get("namespace")
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{prefix}{scope}/{plural_of(str(obj.get('kind', '')))}"


def _request(url: str, method: str, token: str, body: Obj | None = None) -> tuple[int, Obj]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
            return response.status, json.loads(text) if text else {}
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, {"message": text}


def wait_for_file(path: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not path.is_file():
        if time.monotonic() > deadline:
            raise BootstrapError(f"{path}: not written within {seconds:.0f}s; is the worker up?")
        time.sleep(0.5)


def cluster_access(kubeconfig: Obj) -> tuple[str, str]:
    """(server, token) of the kubeconfig's current context."""
    contexts = {c["name"]: c["context"] for c in kubeconfig.get("contexts") or []}
    context = contexts.get(kubeconfig.get("current-context", ""))
    if context is None:
        raise BootstrapError("kubeconfig: current-context names no context")
    clusters = {c["name"]: c["cluster"] for c in kubeconfig.get("clusters") or []}
    users = {u["name"]: u["user"] for u in kubeconfig.get("users") or []}
    server = clusters[context["cluster"]]["server"]
    token = users[context["user"]].get("token", "")
    return str(server).rstrip("/"), str(token)


def apply_setup(server: str, token: str, setup: Path) -> list[str]:
    """Create every object of the setup file; returns a line per object, as kubectl prints."""
    lines = []
    for obj in (d for d in yaml.safe_load_all(setup.read_text()) if isinstance(d, dict)):
        name = f"{plural_of(str(obj.get('kind')))}/{(obj.get('metadata') or {}).get('name')}"
        status, body = _request(server + collection_path(obj), "POST", token, obj)
        if status == 409:
            lines.append(f"{name} unchanged")
        elif 200 <= status < 300:
            lines.append(f"{name} created")
        else:
            raise BootstrapError(f"{setup}: {name}: {status} {body.get('message', body)}")
    return lines


def wait_for_manager(manager_url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            status, _ = _request(f"{manager_url}/healthz", "GET", "")
            if status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise BootstrapError(f"manager {manager_url} did not answer /healthz in {seconds:.0f}s")
        time.sleep(1.0)


def register(manager_url: str, api_token: str, name: str, kubeconfig: Obj, token_out: Path) -> str:
    status, body = _request(
        f"{manager_url}/api/v1/clusters",
        "POST",
        api_token,
        {"name": name, "kubeconfig": kubeconfig},
    )
    if status == 201:
        token_out.write_text(str(body["token"]))
        token_out.chmod(0o600)
        return f"cluster {name} registered"
    if status == 409 and token_out.is_file():
        return f"cluster {name} already registered"
    message = (body.get("error") or {}).get("message") or body
    hint = (
        " (its agent token is lost: `docker compose down -v` starts afresh)"
        if status == 409
        else ""
    )
    raise BootstrapError(f"registering {name}: {status} {message}{hint}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True, help="the worker's cluster name")
    parser.add_argument("--kubeconfig", required=True, type=Path)
    parser.add_argument("--setup", type=Path, help="Kueue setup YAML to create in the worker")
    parser.add_argument(
        "--server-for-manager", required=True, help="worker API as the manager reaches it"
    )
    parser.add_argument("--manager-url", required=True)
    parser.add_argument("--token-out", type=Path, help="default: <kubeconfig dir>/<name>.token")
    parser.add_argument("--wait-seconds", type=float, default=120.0)
    args = parser.parse_args(argv)
    api_token = os.environ.get("MKQ_API_TOKEN", "")
    token_out = args.token_out or args.kubeconfig.with_name(f"{args.name}.token")
    try:
        if not api_token:
            raise BootstrapError("MKQ_API_TOKEN is not set")
        wait_for_file(args.kubeconfig, args.wait_seconds)
        kubeconfig = yaml.safe_load(args.kubeconfig.read_text())
        server, token = cluster_access(kubeconfig)
        if args.setup is not None:
            for line in apply_setup(server, token, args.setup):
                print(f"{args.name}: {line}", flush=True)
        for cluster in kubeconfig.get("clusters") or []:
            cluster["cluster"] = {"server": args.server_for_manager}
        wait_for_manager(args.manager_url.rstrip("/"), args.wait_seconds)
        print(
            register(args.manager_url.rstrip("/"), api_token, args.name, kubeconfig, token_out),
            flush=True,
        )
    except (BootstrapError, OSError, KeyError, yaml.YAMLError) as error:
        print(f"bootstrap {args.name}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
