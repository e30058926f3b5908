"""The kind backend: one manager and two worker clusters in Docker, deployed from deploy/.

Chosen by the e2e fixtures when MKQ_E2E_BACKEND=kind and `docker info` works. The clusters are
created once per session from deploy/kind/, the image is built from the Dockerfile and loaded
into each, the CRDs and the kustomize overlays of deploy/overlays/ are applied, the workers are
registered through the REST API (README, "Deploying on real clusters"), and everything is
deleted at the end. A test gets host kubeconfigs, the manager's REST address (a
`kubectl port-forward` to its Service) and token, as with kubesim.

Each test's manager settings become MKQ_* variables of the manager Deployment (a rollout).

Needs: docker, kind and kubectl on PATH, and room for the examples' quotas (team-a may use 16
CPUs in worker-cpu): a host with 12 or more CPUs.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from cryptography.fernet import Fernet

from kubesim.fault_proxy import FaultProxy
from mkq.demo.manifests import EXAMPLES, read_documents
from tests.e2e.backends.base import MANAGER_CLUSTER, WORKERS, SystemOptions, api_client
from tests.e2e.backends.setup import manager_setup, run_command, token_secret_kubeconfig

REPO = EXAMPLES.parents[1]
DEPLOY = REPO / "deploy"
IMAGE = "mkq:e2e"
JOB_IMAGE = "busybox:1.36"  # what tests/e2e/jobs.py runs
PREFIX = "mkq-e2e"
NAMESPACE = "mkq-system"  # where the manifests put the manager, the agent and their Secrets
NODE_PORT = 30080  # the manager's API for agents in the other kind clusters
# The same fast periods as the kubesim backend, as the manager's environment.
BASE_ENV = {
    "MKQ_KUEUE_NAMESPACE": NAMESPACE,
    "MKQ_MANAGER_CLUSTER_SECONDS": "2",
    "MKQ_RESYNC_SECONDS": "2",
    "MKQ_GC_SECONDS": "2",
    "MKQ_LOST_CHECK_SECONDS": "0.5",
    "MKQ_RECONNECT_BASE_SECONDS": "0.5",
    "MKQ_RECONNECT_CAP_SECONDS": "2",
}
POSTGRES_PASSWORD = "mkq-e2e"


def _kind_name(cluster: str) -> str:
    return f"{PREFIX}-{cluster}"


def _postgres() -> list[dict[str, Any]]:
    """A throwaway Postgres in the manager cluster, for the manager's store."""
    labels = {"app.kubernetes.io/name": "postgres"}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "postgres", "namespace": NAMESPACE},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "postgres",
                                "image": "postgres:16-alpine",
                                "env": [
                                    {"name": "POSTGRES_USER", "value": "mkq"},
                                    {"name": "POSTGRES_PASSWORD", "value": POSTGRES_PASSWORD},
                                    {"name": "POSTGRES_DB", "value": "mkq"},
                                ],
                                "ports": [{"containerPort": 5432}],
                                "readinessProbe": {
                                    "exec": {"command": ["pg_isready", "-U", "mkq"]},
                                    "periodSeconds": 2,
                                },
                            }
                        ]
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "postgres", "namespace": NAMESPACE},
            "spec": {"selector": labels, "ports": [{"port": 5432}]},
        },
    ]


def _manager_node_port() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "mkq-manager-e2e", "namespace": NAMESPACE},
        "spec": {
            "type": "NodePort",
            "selector": {"app.kubernetes.io/name": "mkq-manager"},
            "ports": [{"port": 80, "targetPort": "http", "nodePort": NODE_PORT}],
        },
    }


@dataclass
class KindEnvironment:
    """The session's kind clusters with mkq deployed; deleted by `delete()`."""

    scratch: Path
    kubeconfigs: dict[str, Path]
    api_token: str
    created: list[str] = field(default_factory=list)
    manager_env: dict[str, str] = field(default_factory=dict)

    # ---- creation ---------------------------------------------------------------------------

    @classmethod
    def create(cls) -> KindEnvironment:
        for tool in ("docker", "kind", "kubectl"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"the kind backend needs {tool} on PATH")
        scratch = Path(tempfile.mkdtemp(prefix="mkq-e2e-kind-"))
        environment = cls(scratch, {}, secrets.token_urlsafe(24))
        try:
            environment._create_clusters()
            environment._load_images()
            environment._install()
        except BaseException:
            environment.delete()
            raise
        return environment

    def kubectl(self, cluster: str, *args: str, stdin: str | None = None) -> str:
        return run_command(
            "kubectl", "--kubeconfig", str(self.kubeconfigs[cluster]), *args, stdin=stdin
        )

    def apply(self, cluster: str, objects: list[dict[str, Any]]) -> None:
        self.kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects))

    def _create_clusters(self) -> None:
        configs = {MANAGER_CLUSTER: DEPLOY / "kind" / "manager.yaml"}
        configs.update({worker: DEPLOY / "kind" / "worker.yaml" for worker in WORKERS})
        for cluster, config in configs.items():
            kubeconfig = self.scratch / f"{cluster}.kubeconfig"
            name = _kind_name(cluster)
            self.created.append(name)
            run_command(
                "kind",
                "create",
                "cluster",
                "--name",
                name,
                "--config",
                str(config),
                "--kubeconfig",
                str(kubeconfig),
                "--wait",
                "180s",
            )
            self.kubeconfigs[cluster] = kubeconfig

    def _load_images(self) -> None:
        run_command("docker", "build", "-t", IMAGE, str(REPO), timeout=1800)
        run_command("docker", "pull", JOB_IMAGE)
        for name in self.created:
            run_command("kind", "load", "docker-image", IMAGE, JOB_IMAGE, "--name", name)

    def _overlay(self, name: str, base: Path, extra: dict[str, Any]) -> Path:
        """A kustomize overlay of `base` in the scratch folder: our image, our Secrets."""
        directory = self.scratch / "overlays" / name
        directory.mkdir(parents=True, exist_ok=True)
        kustomization = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [os.path.relpath(base, directory)],
            "images": [{"name": "mkq", "newName": IMAGE.split(":")[0], "newTag": "e2e"}],
            "generatorOptions": {"disableNameSuffixHash": True},
            **extra,
        }
        (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
        return directory

    def _install(self) -> None:
        for cluster in self.kubeconfigs:
            self.kubectl(cluster, "apply", "--server-side", "-f", str(DEPLOY / "crds"))
        self._install_manager()
        tokens = self._register_workers()
        for worker in WORKERS:
            self._install_agent(worker, tokens[worker])
        for worker in WORKERS:
            self.apply(worker, read_documents(EXAMPLES / f"{worker}-setup.yaml"))
        self._publish_kubeconfigs()
        self.apply(MANAGER_CLUSTER, manager_setup(WORKERS))

    def _install_manager(self) -> None:
        database = f"postgresql+asyncpg://mkq:{POSTGRES_PASSWORD}@postgres.{NAMESPACE}.svc:5432/mkq"
        env = [{"name": k, "value": v} for k, v in BASE_ENV.items()]
        overlay = self._overlay(
            "manager",
            DEPLOY / "overlays" / "manager-cluster",
            {
                "secretGenerator": [
                    {
                        "name": "mkq-database",
                        "namespace": NAMESPACE,
                        "behavior": "replace",
                        "literals": [f"database-url={database}"],
                    },
                    {
                        "name": "mkq-manager",
                        "namespace": NAMESPACE,
                        "behavior": "replace",
                        "literals": [
                            f"api-token={self.api_token}",
                            f"encryption-key={Fernet.generate_key().decode()}",
                        ],
                    },
                ],
                "patches": [
                    {
                        "patch": yaml.safe_dump(
                            {
                                "apiVersion": "apps/v1",
                                "kind": "Deployment",
                                "metadata": {"name": "mkq-manager", "namespace": NAMESPACE},
                                "spec": {
                                    "template": {
                                        "spec": {"containers": [{"name": "manager", "env": env}]}
                                    }
                                },
                            }
                        )
                    }
                ],
            },
        )
        self.kubectl(MANAGER_CLUSTER, "create", "namespace", NAMESPACE)
        self.apply(MANAGER_CLUSTER, _postgres())
        self.kubectl(
            MANAGER_CLUSTER,
            "-n",
            NAMESPACE,
            "rollout",
            "status",
            "deploy/postgres",
            "--timeout=300s",
        )
        self.kubectl(MANAGER_CLUSTER, "apply", "-k", str(overlay))
        self.apply(MANAGER_CLUSTER, [_manager_node_port()])
        self.wait_manager_ready()
        self.manager_env = dict(BASE_ENV)

    def wait_manager_ready(self) -> None:
        self.kubectl(
            MANAGER_CLUSTER,
            "-n",
            NAMESPACE,
            "rollout",
            "status",
            "deploy/mkq-manager",
            "--timeout=300s",
        )

    def _container_ip(self, cluster: str) -> str:
        node = f"{_kind_name(cluster)}-control-plane"
        return run_command(
            "docker",
            "inspect",
            "-f",
            '{{(index .NetworkSettings.Networks "kind").IPAddress}}',
            node,
        ).strip()

    def manager_url_for_agents(self) -> str:
        return f"http://{self._container_ip(MANAGER_CLUSTER)}:{NODE_PORT}"

    def _manager_access_kubeconfig(self, worker: str) -> dict[str, Any]:
        """What the manager uses in a worker: the mkq-manager-access token, the internal
        address of the worker's API server (README, step 4)."""
        secret = json.loads(
            self.kubectl(
                worker, "-n", NAMESPACE, "get", "secret", "mkq-manager-access-token", "-o", "json"
            )
        )
        internal = yaml.safe_load(
            run_command("kind", "get", "kubeconfig", "--internal", "--name", _kind_name(worker))
        )
        server = internal["clusters"][0]["cluster"]["server"]
        return token_secret_kubeconfig(worker, server, secret["data"])

    def _install_agent(self, worker: str, token: str) -> None:
        overlay = self._overlay(
            worker,
            DEPLOY / "overlays" / "worker-cluster",
            {
                "secretGenerator": [
                    {
                        "name": "mkq-agent",
                        "namespace": NAMESPACE,
                        "behavior": "replace",
                        "literals": [
                            f"manager-url={self.manager_url_for_agents()}",
                            f"token={token}",
                        ],
                    }
                ],
                "patches": [
                    {
                        "patch": yaml.safe_dump(
                            {
                                "apiVersion": "apps/v1",
                                "kind": "Deployment",
                                "metadata": {"name": "mkq-agent", "namespace": NAMESPACE},
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "containers": [
                                                {
                                                    "name": "agent",
                                                    "env": [
                                                        {
                                                            "name": "MKQ_CLUSTER_NAME",
                                                            "value": worker,
                                                        }
                                                    ],
                                                }
                                            ]
                                        }
                                    }
                                },
                            }
                        )
                    }
                ],
            },
        )
        self.kubectl(worker, "apply", "-k", str(overlay))
        self.kubectl(
            worker, "-n", NAMESPACE, "rollout", "status", "deploy/mkq-agent", "--timeout=300s"
        )

    def _register_workers(self) -> dict[str, str]:
        """Install the manager-access identity in each worker, then register it over REST."""
        for worker in WORKERS:
            overlay = self._overlay(
                f"{worker}-access", DEPLOY / "base" / "manager-access", {"images": []}
            )
            self.kubectl(worker, "create", "namespace", NAMESPACE)
            self.kubectl(worker, "apply", "-k", str(overlay))
        tokens: dict[str, str] = {}
        with PortForward(self) as url:
            for worker in WORKERS:
                kubeconfig = self._wait_access_kubeconfig(worker)
                response = httpx.post(
                    f"{url}/api/v1/clusters",
                    headers={"Authorization": f"Bearer {self.api_token}"},
                    json={"name": worker, "kubeconfig": yaml.safe_dump(kubeconfig)},
                    timeout=30,
                )
                response.raise_for_status()
                tokens[worker] = response.json()["token"]
        return tokens

    def _wait_access_kubeconfig(self, worker: str) -> dict[str, Any]:
        """The token controller fills the Secret shortly after it is created."""
        deadline = time.monotonic() + 60
        while True:
            try:
                return self._manager_access_kubeconfig(worker)
            except (KeyError, TypeError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def _publish_kubeconfigs(self) -> None:
        """The MultiKueueClusters of the manager setup name Secrets `<worker>-kubeconfig`."""
        for worker in WORKERS:
            text = yaml.safe_dump(self._manager_access_kubeconfig(worker))
            self.apply(
                MANAGER_CLUSTER,
                [
                    {
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "metadata": {"name": f"{worker}-kubeconfig", "namespace": NAMESPACE},
                        "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
                    }
                ],
            )

    # ---- per-test operations -----------------------------------------------------------------

    def set_manager_env(self, wanted: Mapping[str, str]) -> None:
        """Set the test's MKQ_* variables (and unset the last test's), then roll out."""
        changes = [f"{k}={v}" for k, v in wanted.items() if self.manager_env.get(k) != v]
        changes += [f"{k}-" for k in self.manager_env if k not in wanted]
        if not changes:
            return
        self.kubectl(
            MANAGER_CLUSTER,
            "-n",
            NAMESPACE,
            "set",
            "env",
            "deploy/mkq-manager",
            "-c",
            "manager",
            *changes,
        )
        self.manager_env = dict(wanted)
        self.wait_manager_ready()

    def scale_manager(self, replicas: int) -> None:
        self.kubectl(
            MANAGER_CLUSTER,
            "-n",
            NAMESPACE,
            "scale",
            "deploy/mkq-manager",
            f"--replicas={replicas}",
        )
        if replicas == 0:
            # Down means no manager pod at all (`kubectl wait --for=delete` errs on none).
            deadline = time.monotonic() + 120
            while self.kubectl(
                MANAGER_CLUSTER, "-n", NAMESPACE, "get", "pods", "-o", "name",
                "-l", "app.kubernetes.io/name=mkq-manager",
            ).strip():  # fmt: skip
                if time.monotonic() > deadline:
                    raise RuntimeError("the manager's pods did not go away within 120s")
                time.sleep(1)
        else:
            self.wait_manager_ready()

    def nodes_of(self, cluster: str) -> list[str]:
        return run_command("kind", "get", "nodes", "--name", _kind_name(cluster)).split()

    def pause(self, cluster: str) -> None:
        run_command("docker", "pause", *self.nodes_of(cluster))

    def unpause(self, cluster: str) -> None:
        run_command("docker", "unpause", *self.nodes_of(cluster))

    # ---- teardown ----------------------------------------------------------------------------

    def delete(self) -> None:
        for name in reversed(self.created):
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                nodes = run_command("kind", "get", "nodes", "--name", name).split()
                if nodes:
                    # A paused node cannot be removed; a test may have left one paused.
                    subprocess.run(["docker", "unpause", *nodes], capture_output=True, check=False)
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                run_command("kind", "delete", "cluster", "--name", name)
        shutil.rmtree(self.scratch, ignore_errors=True)


class PortForward:
    """`kubectl port-forward` to the manager's Service, on a free local port."""

    def __init__(self, environment: KindEnvironment) -> None:
        self._environment = environment
        self._process: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> str:
        kubeconfig = self._environment.kubeconfigs[MANAGER_CLUSTER]
        self._process = subprocess.Popen(
            [
                "kubectl",
                "--kubeconfig",
                str(kubeconfig),
                "-n",
                NAMESPACE,
                "port-forward",
                "svc/mkq-manager",
                ":80",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()  # "Forwarding from 127.0.0.1:PORT -> 8080"
        found = re.search(r"127\.0\.0\.1:(\d+)", line)
        if found is None:
            self.stop()
            raise RuntimeError(f"kubectl port-forward did not start: {line!r}")
        self.url = f"http://127.0.0.1:{found.group(1)}"
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/readyz", timeout=5).status_code == 200:
                    return self.url
            if time.monotonic() > deadline:
                raise RuntimeError("the manager did not become ready behind the port-forward")
            time.sleep(0.5)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=10)
            self._process = None


@dataclass
class KindSystem:
    environment: KindEnvironment
    forward: PortForward
    paused: set[str] = field(default_factory=set)

    @property
    def workers(self) -> tuple[str, ...]:
        return WORKERS

    @property
    def kubeconfigs(self) -> Mapping[str, Path]:
        return self.environment.kubeconfigs

    @property
    def api_url(self) -> str:
        return self.forward.url

    @property
    def api_token(self) -> str:
        return self.environment.api_token

    async def make_unreachable(self, worker: str) -> None:
        await asyncio.to_thread(self.environment.pause, worker)
        self.paused.add(worker)

    async def freeze(self, worker: str) -> None:
        await self.make_unreachable(worker)

    async def thaw(self, worker: str) -> None:
        await asyncio.to_thread(self.environment.unpause, worker)
        self.paused.discard(worker)

    def link(self, worker: str) -> FaultProxy:
        raise NotImplementedError(
            "kind: the manager runs in the manager cluster and reaches the workers over "
            "Docker's network, where no test proxy stands; run the link faults on kubesim or real"
        )

    async def kill_agent(self, worker: str) -> None:
        raise NotImplementedError("kind: kill the agent's pod with kubectl delete --force")

    async def start_agent(self, worker: str) -> None:
        raise NotImplementedError("kind: the agent's Deployment starts a new pod by itself")

    @contextlib.asynccontextmanager
    async def manager_stopped(self) -> AsyncIterator[None]:
        self.forward.stop()
        await asyncio.to_thread(self.environment.scale_manager, 0)
        try:
            yield
        finally:
            await asyncio.to_thread(self.environment.scale_manager, 1)
            await asyncio.to_thread(self.forward.start)

    async def clean_up(self) -> None:
        """Bring paused workers back and cancel what the test left unfinished."""
        for worker in sorted(self.paused):
            await asyncio.to_thread(self.environment.unpause, worker)
        self.paused.clear()
        async with api_client(self) as api:
            response = await api.get("/workloads", params={"limit": 1000})
            response.raise_for_status()
            for item in response.json()["items"]:
                if item["state"] not in ("Succeeded", "Failed", "Cancelled"):
                    await api.delete(f"/workloads/{item['namespace']}/{item['name']}")


class KindBackend:
    name = "kind"

    def __init__(self, environment: KindEnvironment) -> None:
        self.environment = environment

    @contextlib.asynccontextmanager
    async def system(self, options: SystemOptions) -> AsyncIterator[KindSystem]:
        env = dict(BASE_ENV)
        env.update({f"MKQ_{key.upper()}": str(value) for key, value in options.manager.items()})
        await asyncio.to_thread(self.environment.set_manager_env, env)
        forward = PortForward(self.environment)
        await asyncio.to_thread(forward.start)
        system = KindSystem(self.environment, forward)
        try:
            yield system
        finally:
            try:
                await system.clean_up()
            finally:
                forward.stop()
