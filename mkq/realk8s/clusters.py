"""Start and stop real Kubernetes control planes on loopback ports, one per cluster name.

A directory holds one set of clusters: one etcd (each cluster's kube-apiserver keeps its objects
under its own prefix), and per cluster a kube-apiserver with RBAC and ServiceAccount tokens, a
kube-controller-manager (the Job, garbage-collector, namespace and token controllers), a
kube-scheduler, and KWOK, which plays the kubelet of the cluster's nodes. The nodes are the
demo's kubesim profiles (`deploy/examples/nodes/<name>.yaml`). Every process and its pid are
recorded in `DIR/realk8s.json`, so `stop_clusters(DIR)` ends them all, from any process.

`DIR/<name>.kubeconfig` is the cluster's admin (system:masters) kubeconfig.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import ssl
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubesim.nodes import load_profile, node_object
from kubesim.ports import free_port
from mkq.realk8s.binaries import REPO, ensure_control_plane
from mkq.realk8s.pki import CLIENTS, FRONT_PROXY_CLIENT, SERVICE_IP, Pki, create_pki

STATE = "realk8s.json"
NODE_PROFILES = REPO / "deploy" / "examples" / "nodes"
KWOK_STAGES = Path(__file__).with_name("kwok-stages.yaml")
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
SERVICE_CIDR = f"{SERVICE_IP.rsplit('.', 2)[0]}.0.0/16"
READY_TIMEOUT = 120.0


class ClusterStartError(RuntimeError):
    """A control plane did not come up; the message names the process and its log."""


@dataclass(frozen=True)
class RealCluster:
    """One running control plane, as a client sees it."""

    name: str
    port: int
    directory: Path

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubeconfig_path(self) -> Path:
        return self.directory.parent / f"{self.name}.kubeconfig"

    @property
    def pki(self) -> Pki:
        return Pki(self.directory / "pki")

    @property
    def kubeconfig(self) -> dict[str, Any]:
        loaded: dict[str, Any] = yaml.safe_load(self.kubeconfig_path.read_text())
        return loaded

    def admin_http(self, timeout: float = 10.0) -> httpx.Client:
        """A plain HTTP client with the admin identity (for set-up, not for the code tested)."""
        pki = self.pki
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        context.load_cert_chain(str(pki.client_cert("admin")), str(pki.client_key("admin")))
        return httpx.Client(base_url=self.server, verify=context, timeout=timeout)


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def kubeconfig_document(
    name: str, server: str, ca: Path, user: str, credentials: dict[str, str]
) -> dict[str, Any]:
    """A one-context kubeconfig with everything embedded."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": server, "certificate-authority-data": _b64(ca)}}
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
        "current-context": name,
    }


def _client_kubeconfig(name: str, server: str, pki: Pki, client: str) -> dict[str, Any]:
    return kubeconfig_document(
        name,
        server,
        pki.ca_cert,
        client,
        {
            "client-certificate-data": _b64(pki.client_cert(client)),
            "client-key-data": _b64(pki.client_key(client)),
        },
    )


# Runs a program with SIGKILL as its parent-death signal (util-linux, Linux): set by a
# program exec'd in the child, not by a preexec_fn, which is unsafe in a threaded parent.
# The signal comes when the thread that started the process ends. KILL, not TERM: a
# kube-apiserver whose etcd went first hangs in its graceful shutdown; stop_clusters is the
# graceful way down.
DIE_WITH_PARENT = ("setpriv", "--pdeathsig", "KILL", "--")
# The same with SIGTERM, for a program that must still stop cleanly (write its results, stop
# what it started) when its parent dies.
STOP_WITH_PARENT = ("setpriv", "--pdeathsig", "TERM", "--")


class _Launcher:
    """Starts processes in their own sessions, logs to DIR/logs, records them in DIR's state."""

    def __init__(self, directory: Path, *, tie_to_parent: bool) -> None:
        self.directory = directory
        self.tie_to_parent = tie_to_parent
        self.logs = directory / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.processes: list[dict[str, Any]] = []
        self.clusters: dict[str, dict[str, Any]] = {}

    def start(self, label: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        log = self.logs / f"{label}.log"
        command = [*DIE_WITH_PARENT, *argv] if self.tie_to_parent else list(argv)
        with log.open("ab") as out:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append({"label": label, "pid": process.pid, "log": str(log)})
        self.save()
        return process

    def save(self) -> None:
        state = {"processes": self.processes, "clusters": self.clusters}
        (self.directory / STATE).write_text(json.dumps(state, indent=2))


def _wait(what: str, check: Any, log: Path, process: subprocess.Popen[bytes] | None) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        if process is not None and process.poll() is not None:
            raise ClusterStartError(
                f"{what} exited ({process.returncode}); see {log}:\n{log_tail(log)}"
            )
        with contextlib.suppress(httpx.HTTPError, OSError):
            if check():
                return
        if time.monotonic() > deadline:
            raise ClusterStartError(f"{what} not ready in {READY_TIMEOUT:.0f}s; see {log}")
        time.sleep(0.2)


def log_tail(log: Path, lines: int = 15) -> str:
    """The last lines of a process's log, for an error that says why it stopped."""
    with contextlib.suppress(OSError):
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    return ""


def start_beside(
    argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start a program beside a control plane (a job kind's operator, a relay): killed with
    this process, in a session of its own, its output appended to `log`."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [*DIE_WITH_PARENT, *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )


def wait_until_ready(
    ready: Callable[[], bool],
    process: subprocess.Popen[bytes],
    log: Path,
    *,
    program: str,
    readiness: str,
    timeout: float = 120.0,
) -> None:
    """Poll `ready()` until it holds, for a program run beside a control plane (a job kind's
    operator): ClusterStartError with its log's tail when it exits or `timeout` passes first."""
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None:
            raise ClusterStartError(
                f"{program} exited ({process.returncode}); see {log}:\n{log_tail(log)}"
            )
        if time.monotonic() > deadline:
            raise ClusterStartError(f"{readiness} not in time; see {log}:\n{log_tail(log)}")
        time.sleep(0.5)


def stop_process(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """SIGTERM, then SIGKILL when it has not ended within `grace` seconds."""
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _start_etcd(launcher: _Launcher, programs: dict[str, Path]) -> str:
    client_port, peer_port = free_port(), free_port()
    client = f"http://127.0.0.1:{client_port}"
    peer = f"http://127.0.0.1:{peer_port}"
    process = launcher.start(
        "etcd",
        [
            str(programs["etcd"]),
            "--name=mkq",
            f"--data-dir={launcher.directory / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=mkq={peer}",
            "--unsafe-no-fsync",  # test data: speed over durability across power loss
            "--log-level=warn",
        ],
    )
    launcher.clusters["_etcd"] = {"url": client}

    def healthy() -> bool:
        return httpx.get(f"{client}/health", timeout=2).json().get("health") == "true"

    _wait("etcd", healthy, launcher.logs / "etcd.log", process)
    return client


def _aggregation_flags(pki: Pki) -> list[str]:
    """The aggregation layer, for the agent's visibility API (an APIService): the client
    certificate kube-apiserver proxies with, and the CA and name it publishes in
    kube-system/extension-apiserver-authentication for the servers behind it. Only where asked:
    kube-apiserver watches each of these files with an inotify instance of its own, and a test
    session's many control planes would run out of the 128 a user gets by default."""
    return [
        f"--requestheader-client-ca-file={pki.front_proxy_ca_cert}",
        f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki.front_proxy_client_cert}",
        f"--proxy-client-key-file={pki.front_proxy_client_key}",
    ]


def _start_apiserver(
    launcher: _Launcher,
    programs: dict[str, Path],
    cluster: RealCluster,
    etcd: str,
    aggregation: bool,
    extra_flags: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    pki = cluster.pki
    return launcher.start(
        f"{cluster.name}-kube-apiserver",
        [
            str(programs["kube-apiserver"]),
            f"--etcd-servers={etcd}",
            f"--etcd-prefix=/{cluster.name}/registry",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            # The `kubernetes` Service may not point at loopback: it gets no endpoints.
            "--endpoint-reconciler-type=none",
            f"--secure-port={cluster.port}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.service_account_pub}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            "--profiling=false",
            f"--cert-dir={cluster.directory / 'serving'}",
            *(_aggregation_flags(pki) if aggregation else []),
            *extra_flags,
            "--v=0",
        ],
    )


def _write_component_kubeconfigs(cluster: RealCluster) -> dict[str, Path]:
    paths: dict[str, Path] = {}
    for client in CLIENTS:
        document = _client_kubeconfig(cluster.name, cluster.server, cluster.pki, client)
        path = (
            cluster.kubeconfig_path
            if client == "admin"
            else cluster.directory / f"{client}.kubeconfig"
        )
        path.write_text(yaml.safe_dump(document))
        path.chmod(0o600)
        paths[client] = path
    return paths


def _start_components(
    launcher: _Launcher,
    programs: dict[str, Path],
    cluster: RealCluster,
    kubeconfigs: dict[str, Path],
) -> dict[str, subprocess.Popen[bytes]]:
    """Start the controller manager, the scheduler and KWOK; returns their processes."""
    pki = cluster.pki
    started: dict[str, subprocess.Popen[bytes]] = {}
    manager_config = kubeconfigs["controller-manager"]
    started["kube-controller-manager"] = launcher.start(
        f"{cluster.name}-kube-controller-manager",
        [
            str(programs["kube-controller-manager"]),
            f"--kubeconfig={manager_config}",
            f"--authentication-kubeconfig={manager_config}",
            f"--authorization-kubeconfig={manager_config}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki.service_account_key}",
            f"--root-ca-file={pki.ca_cert}",
            # No --cluster-signing-*-file: nothing here signs CSRs, and each of the four signers
            # would watch the files with an inotify instance of its own (a test session runs a
            # dozen control planes against the 128 a user gets by default).
            "--v=0",
        ],
    )
    scheduler_config = kubeconfigs["scheduler"]
    started["kube-scheduler"] = launcher.start(
        f"{cluster.name}-kube-scheduler",
        [
            str(programs["kube-scheduler"]),
            f"--kubeconfig={scheduler_config}",
            f"--authentication-kubeconfig={scheduler_config}",
            f"--authorization-kubeconfig={scheduler_config}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--leader-elect=false",
            "--v=0",
        ],
    )
    started["kwok"] = launcher.start(
        f"{cluster.name}-kwok",
        [
            str(programs["kwok"]),
            f"--kubeconfig={kubeconfigs['kwok']}",
            f"--config={KWOK_STAGES}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
            "--node-ip=127.0.0.1",
            "--cidr=10.244.0.1/16",
            "--server-address=",
        ],
    )
    return started


def node_manifests(cluster: str) -> list[dict[str, Any]]:
    """The cluster's nodes (its demo profile, or kubesim's default three), for KWOK to run."""
    profile = NODE_PROFILES / f"{cluster}.yaml"
    shapes = load_profile(profile if profile.exists() else None)
    nodes = []
    for shape in shapes:
        node = node_object(shape, "")
        node["metadata"].setdefault("annotations", {})[KWOK_ANNOTATION] = "fake"
        node["metadata"].pop("creationTimestamp", None)
        node["metadata"].pop("uid", None)
        node["metadata"].pop("resourceVersion", None)
        status = node.get("status") or {}
        node["status"] = {k: status[k] for k in ("capacity", "allocatable") if k in status}
        nodes.append(node)
    return nodes


def _ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _settle(
    cluster: RealCluster, launcher: _Launcher, started: dict[str, subprocess.Popen[bytes]]
) -> None:
    """Create the nodes, then wait until every one is Ready and pods can be created."""
    with cluster.admin_http() as http:
        log = launcher.logs / f"{cluster.name}-kube-apiserver.log"
        _wait(
            f"{cluster.name}: kube-apiserver",
            lambda: http.get("/readyz").status_code == 200,
            log,
            None,
        )
        wanted = node_manifests(cluster.name)
        for node in wanted:
            response = http.post("/api/v1/nodes", json=node)
            if response.status_code not in (201, 409):
                raise ClusterStartError(f"{cluster.name}: creating a node: {response.text}")

        def nodes_ready() -> bool:
            items = http.get("/api/v1/nodes").json().get("items", [])
            return len(items) >= len(wanted) and all(_ready(n) for n in items)

        _wait(
            f"{cluster.name}: nodes Ready",
            nodes_ready,
            launcher.logs / f"{cluster.name}-kwok.log",
            started["kwok"],
        )
        # The ServiceAccount admission plugin refuses pods until `default` exists.
        _wait(
            f"{cluster.name}: ServiceAccount default/default (kube-controller-manager)",
            lambda: (
                http.get("/api/v1/namespaces/default/serviceaccounts/default").status_code == 200
            ),
            launcher.logs / f"{cluster.name}-kube-controller-manager.log",
            started["kube-controller-manager"],
        )


def start_clusters(
    directory: Path,
    names: Sequence[str],
    *,
    tie_to_parent: bool = False,
    aggregation: bool = False,
    api_server_only: bool = False,
    apiserver_flags: Sequence[str] = (),
) -> dict[str, RealCluster]:
    """Start one control plane per name in `directory`; returns them once every node is Ready.

    With `tie_to_parent`, every process ends when the calling process dies (tests), else they
    outlive it until `stop_clusters(directory)` (the `up` command). With `aggregation`,
    kube-apiserver serves aggregated APIs (APIServices) with a front proxy of its own. With
    `api_server_only`, each is etcd and kube-apiserver alone, with no node, controller or
    scheduler: what controller-runtime's envtest starts, where Kueue's scheduler benchmark runs.
    `apiserver_flags` are added to kube-apiserver's.
    """
    if not names:
        raise ValueError("name at least one cluster")
    if len(set(names)) != len(names):
        raise ValueError(f"cluster names repeat: {', '.join(names)}")
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    if (directory / STATE).exists():
        raise ClusterStartError(
            f"{directory} already holds clusters: `bash scripts/realk8s.sh down {directory}` first"
        )
    programs = ensure_control_plane()
    launcher = _Launcher(directory, tie_to_parent=tie_to_parent)
    try:
        etcd = _start_etcd(launcher, programs)
        clusters: dict[str, RealCluster] = {}
        apiservers: dict[str, subprocess.Popen[bytes]] = {}
        components: dict[str, dict[str, subprocess.Popen[bytes]]] = {}
        for name in names:
            cluster = RealCluster(name, free_port(), directory / name)
            create_pki(cluster.pki.directory, name)
            clusters[name] = cluster
            apiservers[name] = _start_apiserver(
                launcher, programs, cluster, etcd, aggregation, apiserver_flags
            )
            launcher.clusters[name] = {"port": cluster.port, "server": cluster.server}
        launcher.save()
        for name, cluster in clusters.items():
            kubeconfigs = _write_component_kubeconfigs(cluster)
            with cluster.admin_http() as http:
                _wait(
                    f"{name}: kube-apiserver",
                    lambda http=http: http.get("/readyz").status_code == 200,
                    launcher.logs / f"{name}-kube-apiserver.log",
                    apiservers[name],
                )
            if not api_server_only:
                components[name] = _start_components(launcher, programs, cluster, kubeconfigs)
        for name, cluster in clusters.items():
            if not api_server_only:
                _settle(cluster, launcher, components[name])
    except BaseException:
        stop_clusters(directory)
        raise
    return clusters


def running_clusters(directory: Path) -> dict[str, RealCluster]:
    """The clusters `start_clusters` recorded in `directory`."""
    directory = directory.resolve()
    state = json.loads((directory / STATE).read_text())
    return {
        name: RealCluster(name, entry["port"], directory / name)
        for name, entry in state["clusters"].items()
        if not name.startswith("_")
    }


def processes(directory: Path, cluster: str | None = None) -> list[int]:
    """Pids recorded in `directory` (of one cluster's processes, when named)."""
    path = directory.resolve() / STATE
    if not path.exists():
        return []
    entries = json.loads(path.read_text())["processes"]
    return [e["pid"] for e in entries if cluster is None or e["label"].startswith(f"{cluster}-")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of this process counts as gone once reaped.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def signal_processes(pids: Sequence[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)


def stop_clusters(directory: Path, grace: float = 10.0) -> None:
    """End every process recorded in `directory` (SIGCONT, SIGTERM, then SIGKILL after
    `grace` seconds) and forget them; the directory's files stay."""
    directory = directory.resolve()
    pids = processes(directory)
    # A frozen (SIGSTOPped) process must run again to see SIGTERM.
    signal_processes(pids, signal.SIGCONT)
    signal_processes(list(reversed(pids)), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [p for p in pids if _alive(p)]
    signal_processes(survivors, signal.SIGKILL)
    while any(_alive(p) for p in survivors):
        time.sleep(0.05)
    with contextlib.suppress(FileNotFoundError):
        (directory / STATE).unlink()


@contextlib.contextmanager
def clusters_running(
    directory: Path,
    names: Sequence[str],
    *,
    aggregation: bool = False,
    api_server_only: bool = False,
    apiserver_flags: Sequence[str] = (),
) -> Iterator[dict[str, RealCluster]]:
    """`start_clusters` for the length of a block, tied to this process."""
    clusters = start_clusters(
        directory,
        names,
        tie_to_parent=True,
        aggregation=aggregation,
        api_server_only=api_server_only,
        apiserver_flags=apiserver_flags,
    )
    try:
        yield clusters
    finally:
        stop_clusters(directory)


def wait_established(cluster: RealCluster, *targets: str, timeout: float = READY_TIMEOUT) -> None:
    """Wait until the CRDs `targets` name (kubectl arguments: `crd/NAME`, `-f FILE`, `crd
    --all`) are served. Until a CRD has conditions at all, `kubectl wait` fails ("accessor
    error") rather than waits, so it is tried again until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            kubectl(cluster, "wait", "--for=condition=Established", *targets, "--timeout=30s")
            return
        except ClusterStartError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def kubectl(cluster: RealCluster, *args: str, stdin: str | None = None) -> str:
    """kubectl on `cluster` as its admin; ClusterStartError with its stderr if it fails."""
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig_path), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        raise ClusterStartError(f"{cluster.name}: kubectl {args[0]}: {result.stderr.strip()}")
    return result.stdout
