"""Starting and stopping emulated clusters inside the caller's event loop.

    async with run_clusters([ClusterSpec(name="w1")]) as clusters:
        kubeconfig = clusters[0].kubeconfig_path

Each cluster serves the Kubernetes API on its own loopback port with its own bearer token and
runs its controllers (garbage collector, namespaces, scheduler, kubelet, job controller, and
a JobSet controller for clusters that install the JobSet CRD) as tasks it owns; leaving the
block stops the server and cancels every task.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gc
import logging
import secrets
import shutil
import ssl
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from kueue_api.api_errors import ApiError

from .aggregator import Aggregator, FrontProxy
from .api import CRD_KEY, Api
from .events import EventRecorder
from .garbage_collector import GarbageCollector, NamespaceController
from .job_controller import JobController
from .jobset_controller import JobSetController
from .kubelet import Kubelet
from .nodes import load_profile, node_object
from .reconciler import Controller
from .resources import Registry
from .root_ca import RootCAPublisher
from .scheduler import Scheduler
from .server import ApiServer
from .store import Store
from .tokens import TokenController, TokenIssuer
from .webhooks import Webhooks

log = logging.getLogger("kubesim")

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SYSTEM_PRIORITY_CLASSES = (
    ("system-cluster-critical", 2000000000),
    ("system-node-critical", 2000001000),
)


class ClusterStartError(RuntimeError):
    """A cluster could not start (bad node profile, unreadable CRD file, port in use...)."""


@dataclass(frozen=True)
class ClusterSpec:
    """What to start. `nodes` is a profile path, a profile dict, or None for 3 default nodes."""

    name: str = "kubesim"
    nodes: str | Path | dict[str, Any] | None = None
    crds: Sequence[str | Path] = ()
    run_time_scale: float = 1.0
    port: int = 0
    token: str | None = None
    watch_history: int = 50_000
    kubeconfig_dir: str | Path | None = None
    # kubectl (clientcmd) sends a bearer token only over TLS, so the kubeconfig points at the
    # HTTPS listener by default; "http" writes the plain listener instead (fine for
    # kubernetes-asyncio, which sends the token either way).
    kubeconfig_scheme: str = "https"
    # Idle watches with allowWatchBookmarks get a BOOKMARK this often (seconds).
    bookmark_interval: float = 5.0
    # Events from the scheduler, kubelet and job controller (the newest 20,000 are kept).
    events: bool = True
    # Where admission webhooks that name a `service` are served, since kubesim runs no
    # Services: "<namespace>/<name>:<port>" (or "<namespace>/<name>") -> base URL, such as
    # {"kueue-system/kueue-webhook-service:443": "https://127.0.0.1:9443"}. Also settable
    # once running: RunningCluster.serve_webhook_service.
    webhook_services: Mapping[str, str] = field(default_factory=dict, hash=False)


@dataclass
class RunningCluster:
    """A started cluster. `url` is the plain-HTTP listener, `https_url` the TLS one (its CA is
    in the kubeconfig); both accept the same bearer token."""

    name: str
    url: str
    https_url: str
    token: str
    kubeconfig: dict[str, Any]
    kubeconfig_path: Path
    api: Api
    spec: ClusterSpec
    webhooks: Webhooks | None = field(default=None, repr=False)
    _runner: web.ServerRunner | None = field(default=None, repr=False)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list, repr=False)
    _temp_dir: Path | None = field(default=None, repr=False)

    def compact(self) -> None:
        """Drop the watch history, as an etcd compaction does (older versions answer 410)."""
        self.api.store.compact()

    def serve_webhook_service(self, namespace: str, name: str, url: str, port: int = 443) -> None:
        """Admission webhooks whose clientConfig names Service namespace/name (at `port`) are
        called at `url` (e.g. https://127.0.0.1:9443), their certificate verified for
        `<name>.<namespace>.svc`, as kube-apiserver does."""
        if self.webhooks is not None:
            self.webhooks.services[f"{namespace}/{name}:{port}"] = url

    async def stop(self) -> None:
        self.api.store.close_all_watchers()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.webhooks is not None:
            await self.webhooks.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self._temp_dir is not None:
            await asyncio.to_thread(shutil.rmtree, self._temp_dir, True)
            self._temp_dir = None


def kubeconfig_for(name: str, url: str, token: str, ca_data: str | None = None) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": url}
    if ca_data:
        cluster["certificate-authority-data"] = ca_data
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": f"{name}-admin", "user": {"token": token}}],
        "contexts": [
            {
                "name": name,
                "context": {"cluster": name, "user": f"{name}-admin", "namespace": "default"},
            }
        ],
        "current-context": name,
    }


def _read_crds(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    files: list[Path] = []
    for entry in paths:
        path = Path(entry)
        files += (
            sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")) if path.is_dir() else [path]
        )
    for path in files:
        try:
            documents = list(
                yaml.load_all(
                    path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
                )
            )
        except OSError as error:
            raise ClusterStartError(f"{path}: cannot read CRD file: {error.strerror}") from error
        except yaml.YAMLError as error:
            raise ClusterStartError(f"{path}: not valid YAML: {error}") from error
        for index, document in enumerate(documents):
            if document is None:
                continue
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                raise ClusterStartError(
                    f"{path}: document {index + 1}: expected a CustomResourceDefinition, "
                    f"got {_kind_of(document)}"
                )
            found.append(document)
    return found


def _kind_of(document: object) -> str:
    return str(document.get("kind")) if isinstance(document, dict) else type(document).__name__


def _self_signed(directory: Path) -> tuple[ssl.SSLContext, str]:
    """A throwaway self-signed certificate for 127.0.0.1, and its PEM as base64."""
    import base64
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesim")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM)
    cert_path = directory / "kubesim.crt"
    key_path = directory / "kubesim.key"
    cert_path.write_bytes(cert_pem)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context, base64.b64encode(cert_pem).decode()


@dataclass(frozen=True)
class _Files:
    """What start_cluster reads and writes on disk, prepared off the event loop."""

    shapes: list[Any]
    crds: list[dict[str, Any]]
    directory: Path
    temp_dir: Path | None
    ssl_context: ssl.SSLContext
    ca_data: str
    front_proxy: FrontProxy


def _prepare_files(spec: ClusterSpec) -> _Files:
    try:
        shapes = load_profile(spec.nodes)
    except ValueError as error:
        raise ClusterStartError(f"cluster {spec.name}: {error}") from error
    crds = _read_crds(spec.crds)
    if spec.kubeconfig_dir is not None:
        directory = Path(spec.kubeconfig_dir)
        directory.mkdir(parents=True, exist_ok=True)
        temp_dir = None
    else:
        directory = Path(tempfile.mkdtemp(prefix=f"kubesim-{spec.name}-"))
        temp_dir = directory
    ssl_context, ca_data = _self_signed(directory)
    front_proxy = FrontProxy.create(directory)
    return _Files(shapes, crds, directory, temp_dir, ssl_context, ca_data, front_proxy)


def _write_kubeconfig(path: Path, kubeconfig: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(kubeconfig, sort_keys=False))
    path.chmod(0o600)


def _seed(api: Api, spec: ClusterSpec, files: _Files) -> None:
    """What a new cluster holds before anyone connects: namespaces, the system priority
    classes, the nodes of the profile and the CRDs to pre-install."""
    namespace_type = api.type_for("/namespaces")
    for namespace in INITIAL_NAMESPACES:
        api.create(namespace_type, "", {"metadata": {"name": namespace}})
    priority_type = api.type_for("scheduling.k8s.io/priorityclasses")
    for name, value in SYSTEM_PRIORITY_CLASSES:
        description = "Used for system critical pods that must not be moved."
        api.create(
            priority_type,
            "",
            {"metadata": {"name": name}, "value": value, "description": description},
        )
    node_type = api.type_for("/nodes")
    now = api.clock()
    for shape in files.shapes:
        api.create(node_type, "", node_object(shape, now))
    crd_type = api.type_for(CRD_KEY)
    for crd in files.crds:
        try:
            api.create(crd_type, "", crd)
        except ApiError as error:
            name = (crd.get("metadata") or {}).get("name", "?")
            raise ClusterStartError(f"cluster {spec.name}: CRD {name}: {error.message}") from error


async def _listen(
    server: ApiServer, spec: ClusterSpec, ssl_context: ssl.SSLContext
) -> tuple[web.ServerRunner, str, str]:
    """Plain HTTP on spec.port and HTTPS on a free port, both on 127.0.0.1."""
    runner = web.ServerRunner(server.web_server(), handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    plain = web.TCPSite(runner, "127.0.0.1", spec.port, backlog=1024)
    secure = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context, backlog=1024)
    try:
        await plain.start()
        await secure.start()
    except OSError as error:
        await runner.cleanup()
        raise ClusterStartError(
            f"cluster {spec.name}: cannot listen on 127.0.0.1:{spec.port}: {error.strerror}"
        ) from error
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    https_url = f"https://127.0.0.1:{runner.addresses[1][1]}"
    return runner, url, https_url


def _start_controllers(
    api: Api, spec: ClusterSpec, issuer: TokenIssuer, ca_pem: str
) -> list[asyncio.Task[None]]:
    recorder = EventRecorder(api, enabled=spec.events)
    controllers: list[Controller] = [
        GarbageCollector(api),
        NamespaceController(api),
        TokenController(api, issuer, ca_pem),
        RootCAPublisher(api, ca_pem),
        Scheduler(api, recorder),
        Kubelet(api, spec.run_time_scale, recorder),
        JobController(api, recorder),
        JobSetController(api, recorder),
    ]
    return [
        asyncio.create_task(controller.run(), name=f"kubesim-{spec.name}-{controller.name}")
        for controller in controllers
    ]


async def start_cluster(spec: ClusterSpec) -> RunningCluster:
    """Start one cluster; call `stop()` on the result (run_clusters does it for you)."""
    if spec.kubeconfig_scheme not in ("http", "https"):
        raise ClusterStartError(f"cluster {spec.name}: kubeconfig_scheme must be http or https")
    files = await asyncio.to_thread(_prepare_files, spec)
    api = Api(Store(history_limit=spec.watch_history), Registry())
    token = spec.token or secrets.token_urlsafe(24)
    issuer = TokenIssuer(api)
    webhooks = Webhooks(api.store, spec.webhook_services)
    aggregator = Aggregator(api.store, webhooks, files.front_proxy)
    try:
        _seed(api, spec, files)
        api.create(
            api.type_for("/configmaps"), "kube-system", aggregator.authentication_config_map()
        )
        runner, url, https_url = await _listen(
            ApiServer(
                api, frozenset({token}), spec.bookmark_interval, issuer, webhooks, aggregator
            ),
            spec,
            files.ssl_context,
        )
    except ClusterStartError:
        if files.temp_dir is not None:
            await asyncio.to_thread(shutil.rmtree, files.temp_dir, True)
        raise
    if spec.kubeconfig_scheme == "https":
        kubeconfig = kubeconfig_for(spec.name, https_url, token, files.ca_data)
    else:
        kubeconfig = kubeconfig_for(spec.name, url, token)
    kubeconfig_path = files.directory / f"{spec.name}.kubeconfig"
    await asyncio.to_thread(_write_kubeconfig, kubeconfig_path, kubeconfig)
    return RunningCluster(
        name=spec.name,
        url=url,
        https_url=https_url,
        token=token,
        kubeconfig=kubeconfig,
        kubeconfig_path=kubeconfig_path,
        api=api,
        spec=spec,
        webhooks=webhooks,
        _runner=runner,
        _tasks=_start_controllers(
            api, spec, issuer, base64.b64decode(files.ca_data).decode() if files.ca_data else ""
        ),
        _temp_dir=files.temp_dir,
    )


YOUNG_COLLECTION_THRESHOLD = 10_000
"""Allocations between two collections of CPython's youngest generation while clusters run."""


@dataclass
class _CollectorTuning:
    """How many run_clusters blocks are open, and the thresholds the first one replaced."""

    users: int = 0
    replaced: tuple[int, int, int] = (0, 0, 0)


_tuning = _CollectorTuning()


@contextlib.contextmanager
def _collector_tuned_for_serving() -> Iterator[None]:
    """Collect the youngest generation less often while clusters serve.

    Every request and watch event allocates hundreds of small dicts and lists; nearly all of
    them die at once or live on in the store and the watch history, so a collection finds
    almost no garbage. With CPython's default threshold (700) the collector runs every few
    requests and keeps promoting into the older generations, which it then walks again over
    the whole history: about a tenth of the clusters' CPU. The caller's thresholds come back
    when the last block closes."""
    if _tuning.users == 0:
        _tuning.replaced = gc.get_threshold()
        young, middle, old = _tuning.replaced
        gc.set_threshold(max(young, YOUNG_COLLECTION_THRESHOLD), middle, old)
    _tuning.users += 1
    try:
        yield
    finally:
        _tuning.users -= 1
        if _tuning.users == 0:
            gc.set_threshold(*_tuning.replaced)


@contextlib.asynccontextmanager
async def run_clusters(specs: Sequence[ClusterSpec]) -> AsyncIterator[list[RunningCluster]]:
    """Start every cluster, yield them, and stop them all on exit."""
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise ClusterStartError(f"cluster names must be unique, got {names}")
    started: list[RunningCluster] = []
    with _collector_tuned_for_serving():
        try:
            for spec in specs:
                started.append(await start_cluster(spec))
            yield started
        finally:
            for cluster in reversed(started):
                await cluster.stop()
