"""The real backend: real control planes (mkq/realk8s), the manager and agents as processes.

Chosen by MKQ_E2E_BACKEND=real. Three clusters (manager, worker-cpu, worker-tas) run for the
whole session: kube-apiserver, etcd, kube-controller-manager, kube-scheduler and KWOK nodes,
with RBAC enforced. Each gets `deploy/crds/`; each worker the agent's and the manager-access
identities of `deploy/base/`, the manager cluster the manager's. The manager (`mkq manager
serve`) and one agent per worker (`mkq agent run`) run as processes, per test, with the tokens
of those ServiceAccounts (TokenRequest for the agents and the manager, the token Secret for
mkq-manager-access, as the README's deploy steps say), never as admin: a missing permission
fails the test.

make_unreachable freezes (SIGSTOP) every process of the worker's control plane and its agent,
as a machine lost to a network split would be; the test's end thaws them. Between tests every
Job, Workload and pod the test left is removed from every cluster.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import os
import secrets
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import yaml
from cryptography.fernet import Fernet

from kubesim.fault_proxy import FaultProxy
from kubesim.ports import free_port
from kueue_api.loader import load_configuration
from mkq.demo.manifests import EXAMPLES, read_documents
from mkq.demo.system import install_crds, manager_webhook_secret
from mkq.realk8s.binaries import KUBEFLOW_PLURALS, RAY_PLURALS
from mkq.realk8s.clusters import (
    RealCluster,
    kubeconfig_document,
    log_tail,
    processes,
    signal_processes,
    wait_established,
)
from mkq.realk8s.jobset import (
    WEBHOOK_CONFIGURATION_PREFIX,
    install_jobset_crd,
    jobset_controller,
)
from mkq.realk8s.kuberay import install_ray_crds, kuberay_operator
from mkq.realk8s.lws import WEBHOOK_CONFIGURATION_PREFIX as LWS_WEBHOOK_CONFIGURATION_PREFIX
from mkq.realk8s.lws import install_lws_crd, lws_controller
from mkq.realk8s.mpi_operator import install_mpijob_crd, mpi_operator
from mkq.realk8s.training_operator import (
    WEBHOOK_CONFIGURATION,
    install_kubeflow_crds,
    training_operator,
)
from tests.e2e.backends.base import MANAGER_CLUSTER, WORKERS, SystemOptions, api_client
from tests.e2e.backends.processes import Process
from tests.e2e.backends.replicas import ManagerReplicas, replicas_behind
from tests.e2e.backends.setup import manager_setup, run_command, token_secret_kubeconfig
from tests.realk8s import real_clusters

REPO = EXAMPLES.parents[1]
MANAGER_KUEUE = "manager-kueue"  # the identity of the agent on the manager cluster
DEPLOY = REPO / "deploy"
MKQ = Path(sys.executable).with_name("mkq")
NAMESPACE = "mkq-system"  # where the manifests put the identities and the manager's Secrets
SYSTEM_NAMESPACES = {"kube-system", "kube-public", "kube-node-lease", NAMESPACE}
BASE_ENV = {
    "MKQ_KUEUE_NAMESPACE": NAMESPACE,
    "MKQ_MANAGER_CLUSTER_SECONDS": "0.5",
    "MKQ_RESYNC_SECONDS": "2",
    "MKQ_GC_SECONDS": "2",
    "MKQ_LOST_CHECK_SECONDS": "0.5",
    "MKQ_RECONNECT_BASE_SECONDS": "0.2",
    "MKQ_RECONNECT_CAP_SECONDS": "1",
    "MKQ_CAPACITY_FRESHNESS_SECONDS": "30",
    "MKQ_HEALTH_PROBE_SECONDS": "1",
    "MKQ_HEALTH_PROBE_TIMEOUT_SECONDS": "2",
}
CLEAN_TIMEOUT = 90.0


DECLARED_RBAC = "mkq-declared-kinds"


def declared_kinds_rbac(configuration: Path, accounts: tuple[str, ...]) -> list[dict[str, Any]]:
    """A ClusterRole on every kind `configuration` declares (integrations.declarativeKinds) and
    their status, bound to the ServiceAccounts `accounts` of NAMESPACE: what README's
    "Declarative job kinds" asks an operator to grant."""
    declared = load_configuration(configuration).integrations.declarative_kinds or []
    rules = [
        {
            "apiGroups": [spec.group],
            "resources": [spec.plural, f"{spec.plural}/status"],
            "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
        }
        for spec in declared
    ]
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": DECLARED_RBAC},
        "rules": rules,
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": DECLARED_RBAC},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": DECLARED_RBAC,
        },
        "subjects": [
            {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
            for account in accounts
        ],
    }
    return [role, binding]


@dataclass
class RealEnvironment:
    """The session's three clusters with mkq's CRDs, identities and Kueue setup installed."""

    clusters: dict[str, RealCluster]
    scratch: Path
    # JobSet's controllers, Kubeflow's training and MPI operators, KubeRay's operator and
    # LeaderWorkerSet's controller in the workers, for the session (their processes die with
    # it).
    peers: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    identities: dict[str, Path] = field(default_factory=dict)  # kubeconfig per process role
    access: dict[str, dict[str, Any]] = field(default_factory=dict)  # manager-access per worker

    @classmethod
    def create(cls) -> RealEnvironment:
        clusters = real_clusters((MANAGER_CLUSTER, *WORKERS))
        environment = cls(clusters, Path(tempfile.mkdtemp(prefix="mkq-e2e-real-")))
        environment._install()
        return environment

    def kubectl(self, cluster: str, *args: str, stdin: str | None = None) -> str:
        kubeconfig = str(self.clusters[cluster].kubeconfig_path)
        return run_command("kubectl", "--kubeconfig", kubeconfig, *args, stdin=stdin, timeout=120)

    def apply(self, cluster: str, objects: list[dict[str, Any]]) -> None:
        self.kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects))

    def _install(self) -> None:
        install_crds(self.clusters.values())
        # JobSet as its release installs it: the CRD in the manager cluster (where MultiKueue
        # leaves JobSets to the workers), the CRD, webhooks and controller in each worker.
        install_jobset_crd(self.clusters[MANAGER_CLUSTER])
        # Kubeflow's v1 jobs the same way: their CRDs there, the training operator here.
        install_kubeflow_crds(self.clusters[MANAGER_CLUSTER])
        # And MPIJob v2beta1: its CRD there, the MPI operator here (beside the training
        # operator, which runs only its own five kinds).
        install_mpijob_crd(self.clusters[MANAGER_CLUSTER])
        # And KubeRay's kinds: their CRDs there, KubeRay's operator here.
        install_ray_crds(self.clusters[MANAGER_CLUSTER])
        # And LeaderWorkerSet as its release installs it: its CRD there, its CRD, webhooks
        # and controller here.
        install_lws_crd(self.clusters[MANAGER_CLUSTER])
        for worker in WORKERS:
            self.peers.enter_context(
                jobset_controller(self.clusters[worker], self.scratch / f"{worker}-jobset")
            )
            self.peers.enter_context(
                training_operator(self.clusters[worker], self.scratch / f"{worker}-kubeflow")
            )
            self.peers.enter_context(
                mpi_operator(self.clusters[worker], self.scratch / f"{worker}-mpi")
            )
            self.peers.enter_context(
                kuberay_operator(self.clusters[worker], self.scratch / f"{worker}-kuberay")
            )
            self.peers.enter_context(
                lws_controller(self.clusters[worker], self.scratch / f"{worker}-lws")
            )
        for worker in WORKERS:
            for part in ("namespace.yaml", "rbac.yaml"):
                self.kubectl(worker, "apply", "-f", str(DEPLOY / "base" / "agent" / part))
            self.kubectl(worker, "apply", "-k", str(DEPLOY / "base" / "manager-access"))
            self.apply(worker, read_documents(EXAMPLES / f"{worker}-setup.yaml"))
            self.identities[worker] = self._token_kubeconfig(worker, "mkq-agent")
            self.access[worker] = self._manager_access_kubeconfig(worker)
        for part in ("namespace.yaml", "rbac.yaml"):
            self.kubectl(MANAGER_CLUSTER, "apply", "-f", str(DEPLOY / "base" / "manager" / part))
        # The manager's webhook certificate Secret ships empty with its other Secrets.
        self.apply(MANAGER_CLUSTER, [manager_webhook_secret()])
        self.identities[MANAGER_CLUSTER] = self._token_kubeconfig(MANAGER_CLUSTER, "mkq-manager")
        # Kueue on the manager cluster (deploy/base/manager-kueue): the agent's identity there.
        self.kubectl(MANAGER_CLUSTER, "apply", "-f", str(DEPLOY / "base" / "agent" / "rbac.yaml"))
        self.identities[MANAGER_KUEUE] = self._token_kubeconfig(MANAGER_CLUSTER, "mkq-agent")
        self.publish_kubeconfigs(self.access)
        self.apply(MANAGER_CLUSTER, manager_setup(WORKERS))

    def _token_kubeconfig(self, cluster: str, account: str) -> Path:
        """A kubeconfig acting as ServiceAccount `account`, with a TokenRequest token."""
        token = self.kubectl(
            cluster, "-n", NAMESPACE, "create", "token", account, "--duration=24h"
        ).strip()
        real = self.clusters[cluster]
        document = kubeconfig_document(
            cluster, real.server, real.pki.ca_cert, account, {"token": token}
        )
        path = self.scratch / f"{cluster}-{account}.kubeconfig"
        path.write_text(yaml.safe_dump(document))
        return path

    def _manager_access_kubeconfig(self, worker: str) -> dict[str, Any]:
        """What the manager is given for a worker: the mkq-manager-access token Secret that
        kube-controller-manager fills (README, "Deploying on real clusters", step 4)."""
        deadline = time.monotonic() + 60
        while True:
            secret = yaml.safe_load(
                self.kubectl(
                    worker, "-n", NAMESPACE, "get", "secret", "mkq-manager-access-token", "-oyaml"
                )
            )
            data = secret.get("data") or {}
            if "token" in data and "ca.crt" in data:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{worker}: mkq-manager-access-token was never filled")
            time.sleep(0.5)
        return token_secret_kubeconfig(worker, self.clusters[worker].server, data)

    def publish_kubeconfigs(self, kubeconfigs: Mapping[str, dict[str, Any]]) -> None:
        """The manager setup's MultiKueueClusters name Secrets `<worker>-kubeconfig`."""
        for worker in WORKERS:
            text = yaml.safe_dump(kubeconfigs[worker])
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": f"{worker}-kubeconfig", "namespace": NAMESPACE},
                "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
            }
            self.apply(MANAGER_CLUSTER, [secret])

    def install_declared(self, options: SystemOptions) -> None:
        """A test's CRDs in every cluster, and RBAC on the kinds its Configuration declares
        for the identities that read and write them there: the agent's, and the manager's
        (in a worker its access identity, in the manager cluster its own)."""
        for cluster in self.clusters:
            for crd in options.crds:
                self.kubectl(cluster, "apply", "-f", str(crd))
                wait_established(self.clusters[cluster], "-f", str(crd))
            if options.configuration is not None:
                manager = "mkq-manager" if cluster == MANAGER_CLUSTER else "mkq-manager-access"
                self.apply(
                    cluster, declared_kinds_rbac(options.configuration, ("mkq-agent", manager))
                )

    # ---- between tests -------------------------------------------------------------------

    def clean(self) -> None:
        """Remove every Job, Workload and pod of the user namespaces, in every cluster, and
        the agents' Leases (an agent frozen or killed does not release its own)."""
        for cluster in self.clusters.values():
            with cluster.admin_http() as http:
                _clean_cluster(http)

    def freeze(self, cluster: str, sig: signal.Signals) -> None:
        signal_processes(processes(self.scratch_of(cluster), cluster), sig)

    def scratch_of(self, cluster: str) -> Path:
        return self.clusters[cluster].directory.parent


def _call(http: httpx.Client, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """One request, retried while kube-apiserver answers 429 (a watch cache that is still
    initializing, or priority and fairness), as client-go retries it."""
    deadline = time.monotonic() + 30
    while True:
        response = http.request(method, path, **kwargs)
        if response.status_code != 429 or time.monotonic() > deadline:
            return response
        time.sleep(float(response.headers.get("Retry-After") or 1))


def _user_items(http: httpx.Client, path: str) -> list[dict[str, Any]]:
    response = _call(http, "GET", path)
    response.raise_for_status()
    return [
        item
        for item in response.json().get("items", [])
        if item["metadata"].get("namespace") not in SYSTEM_NAMESPACES
    ]


WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/workloads"
JOBS = "/apis/batch/v1/jobs"
PODS = "/api/v1/pods"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/jobsets"
# The kinds, by collection path, removed before the pods they make (all but StatefulSets are
# CRDs, which may be missing in a cluster).
OPTIONAL_JOBS = (
    JOBSETS,
    *(f"/apis/kubeflow.org/v1/{plural}" for plural in KUBEFLOW_PLURALS),
    "/apis/kubeflow.org/v2beta1/mpijobs",
    # A RayJob before the RayCluster it owns.
    *(f"/apis/ray.io/v1/{plural}" for plural in RAY_PLURALS),
    # A LeaderWorkerSet before its StatefulSets' pods (its StatefulSets would make them again).
    "/apis/leaderworkerset.x-k8s.io/v1/leaderworkersets",
    # A StatefulSet before its pods.
    "/apis/apps/v1/statefulsets",
)


def _clean_cluster(http: httpx.Client) -> None:
    _reset_queues(http)
    for workload in _user_items(http, WORKLOADS):
        meta = workload["metadata"]
        path = (
            f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{meta['namespace']}/workloads/{meta['name']}"
        )
        if meta.get("finalizers"):
            _call(
                http,
                "PATCH",
                path,
                json={"metadata": {"finalizers": None}},
                headers={"Content-Type": "application/merge-patch+json"},
            )
        _call(http, "DELETE", path)
    for job in _user_items(http, JOBS):
        meta = job["metadata"]
        _call(
            http,
            "DELETE",
            f"/apis/batch/v1/namespaces/{meta['namespace']}/jobs/{meta['name']}",
            json={"propagationPolicy": "Background"},
        )
    for collection in OPTIONAL_JOBS:
        if _call(http, "GET", collection).status_code != 200:
            continue
        group_version, plural = collection.rsplit("/", 1)
        for job in _user_items(http, collection):
            meta = job["metadata"]
            _call(
                http,
                "DELETE",
                f"{group_version}/namespaces/{meta['namespace']}/{plural}/{meta['name']}",
                json={"propagationPolicy": "Background"},
            )
    for pod in _user_items(http, PODS):
        meta = pod["metadata"]
        _call(
            http,
            "DELETE",
            f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
            json={"gracePeriodSeconds": 0},
        )
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases"
    for lease in _call(http, "GET", leases).json()["items"]:
        _call(http, "DELETE", f"{leases}/{lease['metadata']['name']}")
    deadline = time.monotonic() + CLEAN_TIMEOUT
    while any(_user_items(http, path) for path in (WORKLOADS, JOBS, PODS)):
        if time.monotonic() > deadline:
            left = {path: len(_user_items(http, path)) for path in (WORKLOADS, JOBS, PODS)}
            raise RuntimeError(f"{http.base_url}: objects left after cleaning: {left}")
        time.sleep(0.2)


WEBHOOK_CONFIGURATIONS = (
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
)
CLUSTER_QUEUES = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"


def _reset_queues(http: httpx.Client) -> None:
    """Give the next test the setup's ClusterQueues: a stopPolicy a test set (HoldAndDrain)
    and could not undo must not hold every later test's work.

    The webhook configurations the stopped processes wrote (URL mode: on loopback) go first,
    since their webhook no longer answers and would refuse the change; each process writes its
    own again when it starts."""
    for path in WEBHOOK_CONFIGURATIONS:
        for configuration in _call(http, "GET", path).json().get("items", []):
            webhooks = configuration.get("webhooks") or []
            name = str(configuration["metadata"]["name"])
            if (
                name.startswith((WEBHOOK_CONFIGURATION_PREFIX, LWS_WEBHOOK_CONFIGURATION_PREFIX))
                or name == WEBHOOK_CONFIGURATION
            ):
                continue  # JobSet's, LWS's or Kubeflow's own, whose operators run for the session
            if any((w.get("clientConfig") or {}).get("url") for w in webhooks):
                _call(http, "DELETE", f"{path}/{configuration['metadata']['name']}")
    for queue in _call(http, "GET", CLUSTER_QUEUES).json().get("items", []):
        if (queue.get("spec") or {}).get("stopPolicy", "None") != "None":
            response = _call(
                http,
                "PATCH",
                f"{CLUSTER_QUEUES}/{queue['metadata']['name']}",
                json={"spec": {"stopPolicy": "None"}},
                headers={"Content-Type": "application/merge-patch+json"},
            )
            response.raise_for_status()


@dataclass
class RealSystem:
    environment: RealEnvironment
    env: dict[str, str]
    port: int
    logs: Path
    manager: Process | None = None
    agents: dict[str, Process] = field(default_factory=dict)
    frozen: set[str] = field(default_factory=set)
    tokens: dict[str, str] = field(default_factory=dict)
    webhook_ports: dict[str, int] = field(default_factory=dict)
    # The manager reaches each worker through one of these (the agents do not).
    links: dict[str, FaultProxy] = field(default_factory=dict)
    # The Kueue Configuration every agent is given (`--config`), when the test names one.
    configuration: Path | None = None

    @property
    def workers(self) -> tuple[str, ...]:
        return WORKERS

    @property
    def kubeconfigs(self) -> Mapping[str, Path]:
        return {name: c.kubeconfig_path for name, c in self.environment.clusters.items()}

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_token(self) -> str:
        return self.env["MKQ_API_TOKEN"]

    async def start_manager(self) -> None:
        self.manager = Process(
            "manager",
            [
                str(MKQ),
                "manager",
                "serve",
                "--kubeconfig",
                str(self.environment.identities[MANAGER_CLUSTER]),
                "--listen",
                f"127.0.0.1:{self.port}",
            ],
            self.env,
            self.logs / "manager.log",
        )
        self.manager.start()
        deadline = time.monotonic() + 60
        async with httpx.AsyncClient(timeout=2) as http:
            while True:
                failure = self.manager.failure()
                if failure:
                    raise RuntimeError(failure)
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"{self.api_url}/readyz")).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the manager was not ready in 60s:\n{log_tail(self.manager.log, 30)}"
                    )
                await asyncio.sleep(0.2)

    async def start_agents(self, tokens: Mapping[str, str]) -> None:
        self.tokens.update(tokens)
        for worker in WORKERS:
            await self.start_agent(worker)
        await self.start_agent(MANAGER_CLUSTER)

    async def start_agent(self, worker: str) -> None:
        """The agent of a worker, or (MANAGER_CLUSTER) Kueue on the manager cluster, which
        reports to no manager."""
        on_manager = worker == MANAGER_CLUSTER
        identity = self.environment.identities[MANAGER_KUEUE if on_manager else worker]
        reports = [] if on_manager else ["--manager-url", self.api_url]
        if self.configuration is not None:
            reports += ["--config", str(self.configuration)]
        agent = Process(
            f"agent {worker}",
            [
                str(MKQ),
                "agent",
                "run",
                "--kubeconfig",
                str(identity),
                "--cluster-name",
                worker,
                *reports,
                "--lease-namespace",
                NAMESPACE,
                "--report-interval",
                "0.5",
                # Kueue's webhooks, reached by this cluster's kube-apiserver on loopback.
                "--webhook-port",
                str(self.webhook_ports[worker]),
                "--webhook-host",
                "127.0.0.1",
                "--webhook-url",
                f"https://127.0.0.1:{self.webhook_ports[worker]}",
                # A killed agent's Lease is taken over within seconds, not 15.
                "--lease-duration",
                "4",
                "--renew-deadline",
                "3",
                "--retry-period",
                "0.5",
            ],
            # The token as the Deployment gives it: in the environment, never in argv.
            {
                **{k: v for k, v in os.environ.items() if not k.startswith("MKQ_")},
                **({} if on_manager else {"MKQ_AGENT_TOKEN": self.tokens[worker]}),
            },
            self.logs / f"agent-{worker}.log",
        )
        agent.start()
        self.agents[worker] = agent

    async def kill_agent(self, worker: str) -> None:
        agent = self.agents.pop(worker, None)
        if agent is not None and agent.process is not None:
            agent.signal(signal.SIGKILL)
            await asyncio.to_thread(agent.process.wait)

    async def make_unreachable(self, worker: str) -> None:
        await self.freeze(worker)

    async def freeze(self, worker: str) -> None:
        self.environment.freeze(worker, signal.SIGSTOP)
        self.frozen.add(worker)
        if worker in self.agents:
            self.agents[worker].signal(signal.SIGSTOP)

    async def thaw(self, worker: str) -> None:
        self.environment.freeze(worker, signal.SIGCONT)
        self.frozen.discard(worker)
        if worker in self.agents:
            self.agents[worker].signal(signal.SIGCONT)

    def link(self, worker: str) -> FaultProxy:
        return self.links[worker]

    @contextlib.asynccontextmanager
    async def manager_stopped(self) -> AsyncIterator[None]:
        if self.manager is not None:
            await self.manager.stop()
        try:
            yield
        finally:
            await self.start_manager()

    @contextlib.asynccontextmanager
    async def manager_replicas(self, count: int) -> AsyncIterator[ManagerReplicas]:
        if self.manager is not None:
            await self.manager.stop()
            self.manager = None
        try:
            async with replicas_behind(
                self.port,
                count,
                command=[
                    str(MKQ),
                    "manager",
                    "serve",
                    "--kubeconfig",
                    str(self.environment.identities[MANAGER_CLUSTER]),
                ],
                env=self.env,
                logs=self.logs,
                token=self.api_token,
            ) as replicas:
                yield replicas
        finally:
            await self.start_manager()

    def failures(self) -> list[str]:
        processes_ = [self.manager, *self.agents.values()]
        return [f for p in processes_ if p is not None and (f := p.failure())]

    async def shut_down(self) -> None:
        for worker in sorted(self.frozen):
            self.environment.freeze(worker, signal.SIGCONT)
        self.frozen.clear()
        for agent in self.agents.values():
            await agent.stop()
        if self.manager is not None:
            await self.manager.stop()
        await asyncio.to_thread(self.environment.clean)


class RealBackend:
    name = "real"

    def __init__(self, environment: RealEnvironment, database_url: str) -> None:
        self.environment = environment
        self.database_url = database_url

    @contextlib.asynccontextmanager
    async def system(self, options: SystemOptions) -> AsyncIterator[RealSystem]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MKQ_")}
        env.update(BASE_ENV)
        env["MKQ_DATABASE_URL"] = self.database_url
        env["MKQ_API_TOKEN"] = secrets.token_urlsafe(24)
        env["MKQ_ENCRYPTION_KEY"] = Fernet.generate_key().decode()
        env.update({f"MKQ_{key.upper()}": str(value) for key, value in options.manager.items()})
        logs = Path(tempfile.mkdtemp(prefix="logs-", dir=self.environment.scratch))
        webhook_port = free_port()
        env["MKQ_WEBHOOK_PORT"] = str(webhook_port)
        env["MKQ_WEBHOOK_HOST"] = "127.0.0.1"
        env["MKQ_WEBHOOK_URL"] = f"https://127.0.0.1:{webhook_port}"
        if options.configuration is not None:
            env["MKQ_CONFIG"] = str(options.configuration)
        if options.crds or options.configuration is not None:
            await asyncio.to_thread(self.environment.install_declared, options)
        system = RealSystem(self.environment, env, free_port(), logs)
        system.configuration = options.configuration
        system.webhook_ports = {name: free_port() for name in (*WORKERS, MANAGER_CLUSTER)}
        try:
            routed = await self._links(system)
            await system.start_manager()
            async with api_client(system) as api:
                tokens: dict[str, str] = {}
                for worker in WORKERS:
                    kubeconfig = yaml.safe_dump(routed[worker])
                    response = await api.post(
                        "/clusters", json={"name": worker, "kubeconfig": kubeconfig}
                    )
                    if response.status_code == 409:
                        # Its MultiKueueCluster was seen first: such a cluster's agent gets
                        # its token this way.
                        response = await api.post(f"/clusters/{worker}/token")
                    response.raise_for_status()
                    tokens[worker] = response.json()["token"]
            await system.start_agents(tokens)
            yield system
            failures = system.failures()
            if failures:
                raise AssertionError("a process of the system died:\n" + "\n".join(failures))
        finally:
            await system.shut_down()
            for proxy in system.links.values():
                await proxy.close()

    async def _links(self, system: RealSystem) -> dict[str, dict[str, Any]]:
        """A FaultProxy in front of each worker's API server; the kubeconfigs the manager gets
        (REST and its MultiKueueClusters' Secrets) name the proxy."""
        routed: dict[str, dict[str, Any]] = {}
        for worker in WORKERS:
            server = urlparse(self.environment.clusters[worker].server)
            proxy = FaultProxy(int(server.port or 0))
            await proxy.start()
            system.links[worker] = proxy
            document = copy.deepcopy(self.environment.access[worker])
            for entry in document["clusters"]:
                entry["cluster"]["server"] = f"https://{proxy.address}"
            routed[worker] = document
        await asyncio.to_thread(self.environment.publish_kubeconfigs, routed)
        return routed
