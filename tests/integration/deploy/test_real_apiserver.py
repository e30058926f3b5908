"""The deploy manifests against a REAL kube-apiserver (mkq/realk8s), not kubesim.

kubesim is this project's own emulator: a manifest it accepts may still be refused by the API
server an operator runs (structural-schema rules, CEL `x-kubernetes-validations`, server-side
apply's list-map keys, Deployment and RBAC validation, the token controller). So here the
README's deploy steps run for real on one session-scoped control plane, `deploy` (RBAC
enforced, Job/GC/token controllers, KWOK nodes):

1. `kubectl apply --server-side -f deploy/crds/`, every CRD Established, re-apply a no-op;
2. Kueue's documented examples, server dry runs against those CRDs (plus JobSet's);
3. both overlays applied for real and the bases dry-run on top, Deployments rolled out;
4. what each ServiceAccount may do, as the README's RBAC table says, and the
   `mkq-manager-access-token` Secret filled by the token controller and usable as a kubeconfig.

Everything runs through the real kubectl, one cluster for the module; the tests that need a
step done depend on the module fixtures that do it, so any subset runs on its own.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from manager.settings import ManagerSettings
from mkq.realk8s.clusters import RealCluster, kubeconfig_document, wait_established
from tests.one_cluster import jobset_crd
from tests.realk8s import real_clusters

from .conftest import (
    CRDS,
    DEPLOY,
    KUEUE_EXAMPLES,
    OVERLAYS,
    Document,
    documents,
    dump,
    kubectl_binary,
    kueue_crd_files,
)

pytestmark = pytest.mark.kubectl

BASES = ("agent", "manager", "manager-access")
OVERLAY_NAMES = ("manager-cluster", "worker-cluster")
NAMESPACE = "mkq-system"
SA = f"system:serviceaccount:{NAMESPACE}"

# Kinds of Kueue's examples that no CRD here serves, so no API server can take them: the job
# frameworks' operators (Kubeflow Training, MPI, Ray, Spark, AppWrapper, LeaderWorkerSet, Argo,
# Tekton, agent Sandbox) each install their own CRDs, which this project does not ship or
# integrate; and kind's cluster config files, which are not API objects at all.
NOT_SERVED = frozenset(
    {
        ("agents.x-k8s.io/v1alpha1", "Sandbox"),
        ("argoproj.io/v1alpha1", "Workflow"),
        ("kind.x-k8s.io/v1alpha4", "Cluster"),
        ("kubeflow.org/v1", "JAXJob"),
        ("kubeflow.org/v1", "PaddleJob"),
        ("kubeflow.org/v1", "PyTorchJob"),
        ("kubeflow.org/v1", "TFJob"),
        ("kubeflow.org/v1", "XGBoostJob"),
        ("kubeflow.org/v2beta1", "MPIJob"),
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
        ("ray.io/v1", "RayCluster"),
        ("ray.io/v1", "RayJob"),
        ("ray.io/v1", "RayService"),
        ("sparkoperator.k8s.io/v1beta2", "SparkApplication"),
        ("tekton.dev/v1", "Pipeline"),
        ("tekton.dev/v1", "PipelineRun"),
        ("tekton.dev/v1", "Task"),
        ("workload.codeflare.dev/v1beta2", "AppWrapper"),
    }
)


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


class RealKubectl:
    """The real kubectl against the real cluster (admin unless `kubeconfig` says otherwise).

    Synchronous: the API server is another process, so nothing here must keep a loop running.
    """

    def __init__(self, kubeconfig: Path, cache_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.cache_dir = cache_dir

    def __call__(self, *args: str, stdin: str | None = None, seconds: float = 60) -> Result:
        argv = [
            kubectl_binary(),
            "--kubeconfig",
            str(self.kubeconfig),
            "--cache-dir",
            str(self.cache_dir),
            *args,
        ]
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=seconds)
        return Result(done.returncode, done.stdout, done.stderr)

    def ok(self, *args: str, stdin: str | None = None, seconds: float = 60) -> str:
        result = self(*args, stdin=stdin, seconds=seconds)
        assert result.code == 0, f"kubectl {' '.join(args)} failed:\n{result.err}"
        return result.out

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "-o", "json"))

    def can_i(self, identity: str, verb: str, resource: str, namespace: str | None) -> bool:
        """`kubectl auth can-i --as=identity` (exit code 1 and "no" when denied).

        `resource` may name a subresource, `jobs.batch/status`: can-i itself would read that as
        the object named "status", so it goes as --subresource.
        """
        where = ["-n", namespace] if namespace else ["--all-namespaces"]
        kind, _, subresource = resource.partition("/")
        sub = [f"--subresource={subresource}"] if subresource else []
        result = self("auth", "can-i", f"--as={identity}", verb, kind, *sub, *where)
        answer = result.out.strip().splitlines()[-1] if result.out.strip() else ""
        assert answer in ("yes", "no"), f"can-i {verb} {resource}: {result.out}{result.err}"
        return answer == "yes"


def eventually(check: Callable[[], Any], seconds: float, what: str) -> Any:
    """Poll `check` until it returns something truthy, failing after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {seconds}s waiting for {what}"
        time.sleep(0.2)


# ---- module fixtures: the deploy steps, each once -------------------------------------------


@pytest.fixture(scope="module")
def real() -> RealCluster:
    return real_clusters(("deploy",))["deploy"]


@pytest.fixture(scope="module")
def kubectl(real: RealCluster, tmp_path_factory: pytest.TempPathFactory) -> RealKubectl:
    return RealKubectl(real.kubeconfig_path, tmp_path_factory.mktemp("real-kube-cache"))


@pytest.fixture(scope="module")
def crds_applied(kubectl: RealKubectl, real: RealCluster) -> str:
    """README step 2 (and JobSet's CRD, so the JobSet examples have a server to go to)."""
    out = kubectl.ok("apply", "--server-side", "-f", str(CRDS))
    kubectl.ok("apply", "--server-side", "-f", str(jobset_crd()))
    wait_established(real, "crd", "--all", timeout=60)
    return out


@pytest.fixture(scope="module")
def overlays_applied(kubectl: RealKubectl, crds_applied: str) -> dict[str, str]:
    """README steps 3 and 4, as written (the manager's and a worker's overlay in one cluster:
    their objects share only the namespace, which both declare)."""
    return {
        name: kubectl.ok("apply", "--server-side", "-k", str(OVERLAYS / name))
        for name in OVERLAY_NAMES
    }


def _rendered(kubectl: RealKubectl, directory: Path) -> list[Document]:
    return documents(kubectl.ok("kustomize", str(directory)))


# ---- 1. the CRDs -----------------------------------------------------------------------------


def _kueue_crds(kubectl: RealKubectl) -> dict[str, dict[str, Any]]:
    names = {documents(path.read_text())[0]["metadata"]["name"] for path in kueue_crd_files()}
    listing = kubectl.json("get", "crd")["items"]
    return {crd["metadata"]["name"]: crd for crd in listing if crd["metadata"]["name"] in names}


def test_crds_apply_server_side_become_established_and_reapply_is_a_no_op(
    kubectl: RealKubectl, crds_applied: str
) -> None:
    files = kueue_crd_files()
    applied = [line for line in crds_applied.splitlines() if "serverside-applied" in line]
    assert len(applied) == len(files), crds_applied

    crds = _kueue_crds(kubectl)
    assert len(crds) == len(files)
    for name, crd in crds.items():
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions.get("Established") == "True", f"{name}: {conditions}"
        assert conditions.get("NamesAccepted") == "True", f"{name}: {conditions}"
        # A schema the server cannot make structural is stored, but flagged here.
        assert "NonStructuralSchema" not in conditions, f"{name}: {conditions}"

    before = {name: crd["metadata"]["resourceVersion"] for name, crd in crds.items()}
    again = kubectl.ok("apply", "--server-side", "-f", str(CRDS))
    assert again.count("serverside-applied") == len(files), again
    after = {name: crd["metadata"]["resourceVersion"] for name, crd in _kueue_crds(kubectl).items()}
    assert after == before, "re-applying the same CRDs must not write them"


CLUSTER_QUEUE = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue"}


@pytest.mark.parametrize(
    ("document", "refusal"),
    [
        pytest.param(
            {
                **CLUSTER_QUEUE,
                "metadata": {"name": "uneven"},
                "spec": {
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}
                            ],
                        }
                    ]
                },
            },
            "flavors must have the same number of resources as the coveredResources",
            id="cel-clusterqueue",
        ),
        pytest.param(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "MultiKueueCluster",
                "metadata": {"name": "nowhere"},
                "spec": {"clusterSource": {}},
            },
            "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
            id="cel-multikueuecluster",
        ),
        pytest.param(
            {**CLUSTER_QUEUE, "metadata": {"name": "typo"}, "spec": {"cohortNmae": "x"}},
            ".spec.cohortNmae: field not declared in schema",
            id="structural-unknown-field",
        ),
    ],
)
def test_the_server_enforces_the_crds_validations(
    kubectl: RealKubectl, crds_applied: str, document: Document, refusal: str
) -> None:
    """The examples passing would mean little if the schemas let everything through."""
    result = kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", stdin=dump([document])
    )
    assert result.code != 0, result.out
    assert refusal in result.err, result.err


# ---- 2. Kueue's examples ---------------------------------------------------------------------


def _served(real: RealCluster) -> frozenset[tuple[str, str]]:
    """(apiVersion, kind) pairs the server's discovery lists, subresources left out."""
    pairs: set[tuple[str, str]] = set()
    with real.admin_http() as http:
        group_versions = ["v1"]
        for group in http.get("/apis").raise_for_status().json()["groups"]:
            group_versions += [v["groupVersion"] for v in group["versions"]]
        for group_version in group_versions:
            prefix = "/api/" if group_version == "v1" else "/apis/"
            listing = http.get(prefix + group_version).raise_for_status().json()
            pairs |= {
                (group_version, r["kind"]) for r in listing["resources"] if "/" not in r["name"]
            }
    return frozenset(pairs)


def _generated_name(document: Document) -> bool:
    """`generateName` objects can be created but not applied (kubectl refuses to apply them)."""
    metadata = document.get("metadata") or {}
    return "name" not in metadata and "generateName" in metadata


def _key(document: Document) -> tuple[str, str]:
    return str(document.get("apiVersion")), str(document.get("kind"))


def test_every_served_kueue_example_passes_a_server_dry_run(
    real: RealCluster, kubectl: RealKubectl, crds_applied: str, tmp_path: Path
) -> None:
    """Every example whose kind the server serves (Kueue's kinds from deploy/crds, core, batch,
    apps, RBAC, admission policies, DRA, and JobSet) goes through a server dry run: server-side
    apply, or create for `generateName` objects. The kinds skipped are NOT_SERVED's: the other
    job frameworks' kinds and kind's config files, no CRD of which this project ships."""
    served = _served(real)
    to_apply: list[Document] = []
    to_create: list[Document] = []
    skipped: set[tuple[str, str]] = set()
    for source in sorted(KUEUE_EXAMPLES.rglob("*.yaml")):
        for document in documents(source.read_text()):
            if _key(document) not in served:
                skipped.add(_key(document))
            else:
                (to_create if _generated_name(document) else to_apply).append(document)
    assert skipped <= NOT_SERVED, f"examples of kinds nothing serves: {skipped - NOT_SERVED}"
    kueue = [d for d in to_apply + to_create if d["apiVersion"].startswith("kueue.x-k8s.io/")]
    assert len(kueue) >= 50, "the Kueue examples hold Kueue objects to check"
    assert any(d["kind"] == "JobSet" for d in to_apply), "JobSet's CRD serves its examples"

    # The namespaces the examples assume exist, as in the cluster they are written for (a dry
    # run persists nothing, so an example's own Namespace would not do).
    namespaces = {(d.get("metadata") or {}).get("namespace") for d in to_apply + to_create}
    for namespace in sorted(n for n in namespaces if n and n != "default"):
        kubectl.ok("apply", "--server-side", "-f", "-", stdin=dump([_namespace(namespace)]))

    lines: list[str] = []
    for verb, group in ((["apply", "--server-side"], to_apply), (["create"], to_create)):
        manifest = tmp_path / f"{verb[0]}.yaml"
        manifest.write_text(dump(group))
        result = kubectl(*verb, "--dry-run=server", "-f", str(manifest))
        assert result.code == 0, f"kubectl {verb[0]} --dry-run=server refused:\n{result.err}"
        lines += [line for line in result.out.splitlines() if "(server dry run)" in line]
    assert len(lines) == len(to_apply) + len(to_create), "\n".join(lines)


def _namespace(name: str) -> Document:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


# ---- 3. the overlays and bases ---------------------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAY_NAMES)
def test_overlay_applies_every_object_it_renders(
    kubectl: RealKubectl, overlays_applied: dict[str, str], overlay: str
) -> None:
    rendered = _rendered(kubectl, OVERLAYS / overlay)
    out = overlays_applied[overlay]
    assert out.count("serverside-applied") == len(rendered), out
    for document in rendered:
        assert document["metadata"]["name"] in out, f"{_key(document)} not applied:\n{out}"


@pytest.mark.parametrize("base", BASES)
def test_each_base_passes_a_server_dry_run(
    kubectl: RealKubectl, overlays_applied: dict[str, str], base: str
) -> None:
    """On top of the applied overlays (a dry run cannot create the namespace the base's objects
    go in; base/manager-access has none of its own), so also: nothing in them conflicts."""
    rendered = _rendered(kubectl, DEPLOY / "base" / base)
    out = kubectl.ok(
        "apply", "--server-side", "--dry-run=server", "-k", str(DEPLOY / "base" / base)
    )
    assert out.count("(server dry run)") == len(rendered), out


@pytest.mark.parametrize("deployment", ["mkq-manager", "mkq-agent"])
def test_deployments_roll_out(
    kubectl: RealKubectl, overlays_applied: dict[str, str], deployment: str
) -> None:
    """The ReplicaSet controller creates the pods, so the API server validates the pod spec
    (security context, volumes, probes) only here; KWOK plays the kubelet."""
    kubectl.ok(
        "-n", NAMESPACE, "rollout", "status", f"deploy/{deployment}", "--timeout=40s", seconds=50
    )


# ---- 4. RBAC and the manager's access token --------------------------------------------------

# (verb, resource, namespace or None for all, allowed), per identity, as README's RBAC table says.
Check = tuple[str, str, str | None, bool]
MANAGER_READS_SECRETS_IN = ManagerSettings.model_fields["kueue_namespace"].default
RBAC_TABLE: dict[str, list[Check]] = {
    "mkq-manager": [
        ("get", "secrets", NAMESPACE, True),
        ("list", "secrets", NAMESPACE, True),
        ("watch", "secrets", NAMESPACE, True),
        # The namespace the manager reads worker kubeconfigs from, by default.
        ("get", "secrets", MANAGER_READS_SECRETS_IN, True),
        ("get", "secrets", "default", False),
        ("get", "secrets", "kueue-system", False),
        ("create", "secrets", NAMESPACE, False),
        ("list", "jobs.batch", None, True),
        ("update", "jobs.batch", "team-a", True),
        ("update", "jobs.batch/status", "team-a", True),
        ("create", "jobs.batch", "team-a", False),
        ("delete", "jobs.batch", "team-a", False),
        ("watch", "multikueueconfigs.kueue.x-k8s.io", None, True),
        ("watch", "multikueueclusters.kueue.x-k8s.io", None, True),
        ("list", "clusterqueues.kueue.x-k8s.io", None, True),
        ("list", "localqueues.kueue.x-k8s.io", None, True),
        ("create", "workloads.kueue.x-k8s.io", "team-a", True),
        ("update", "workloads.kueue.x-k8s.io/status", "team-a", True),
        ("create", "clusterqueues.kueue.x-k8s.io", None, False),
        ("create", "leases.coordination.k8s.io", NAMESPACE, False),
    ],
    "mkq-agent": [
        ("update", "workloads.kueue.x-k8s.io/status", "team-a", True),
        ("create", "workloads.kueue.x-k8s.io", "team-a", True),
        ("delete", "workloads.kueue.x-k8s.io", "team-a", True),
        ("update", "clusterqueues.kueue.x-k8s.io/status", None, True),
        ("update", "localqueues.kueue.x-k8s.io/status", "team-a", True),
        ("update", "admissionchecks.kueue.x-k8s.io/status", None, True),
        ("watch", "nodes", None, True),
        ("update", "jobs.batch", "team-a", True),
        ("update", "jobsets.jobset.x-k8s.io", "team-a", True),
        ("update", "pods", "team-a", True),
        ("delete", "pods", "team-a", True),
        ("create", "events", "team-a", True),
        ("watch", "resourceslices.resource.k8s.io", None, True),
        ("update", "leases.coordination.k8s.io", NAMESPACE, True),
        ("create", "leases.coordination.k8s.io", NAMESPACE, True),
        ("update", "leases.coordination.k8s.io", "default", False),
        ("get", "secrets", NAMESPACE, False),
        ("create", "jobs.batch", "team-a", False),
        ("update", "clusterqueues.kueue.x-k8s.io", None, False),
    ],
    "mkq-manager-access": [
        ("create", "jobs.batch", "team-a", True),
        ("delete", "jobs.batch", "team-a", True),
        ("get", "jobs.batch", "team-a", True),
        ("watch", "jobs.batch", None, True),
        ("create", "workloads.kueue.x-k8s.io", "team-a", True),
        ("delete", "workloads.kueue.x-k8s.io", "team-a", True),
        ("list", "workloads.kueue.x-k8s.io", None, True),
        ("create", "jobsets.jobset.x-k8s.io", "team-a", True),
        ("get", "localqueues.kueue.x-k8s.io", "team-a", True),
        ("get", "workloadpriorityclasses.kueue.x-k8s.io", None, True),
        ("list", "pods", None, True),
        ("get", "pods/log", "team-a", True),
        ("update", "jobs.batch", "team-a", False),
        ("update", "workloads.kueue.x-k8s.io/status", "team-a", False),
        ("create", "pods", "team-a", False),
        ("get", "secrets", NAMESPACE, False),
    ],
}


@pytest.mark.parametrize("account", sorted(RBAC_TABLE))
def test_service_accounts_may_do_what_the_readme_says_and_no_more(
    kubectl: RealKubectl, overlays_applied: dict[str, str], account: str
) -> None:
    wrong = [
        f"{verb} {resource} in {namespace or 'all namespaces'}: expected "
        f"{'yes' if allowed else 'no'}"
        for verb, resource, namespace, allowed in RBAC_TABLE[account]
        if kubectl.can_i(f"{SA}:{account}", verb, resource, namespace) != allowed
    ]
    assert wrong == [], f"{account}:\n" + "\n".join(wrong)


@pytest.fixture(scope="module")
def access_token(kubectl: RealKubectl, overlays_applied: dict[str, str]) -> dict[str, str]:
    """The token controller fills the Secret `mkq-manager-access-token` (decoded data)."""

    def filled() -> dict[str, str] | None:
        secret = kubectl.json("-n", NAMESPACE, "get", "secret", "mkq-manager-access-token")
        data = secret.get("data") or {}
        if not {"token", "ca.crt"} <= set(data):
            return None
        return {key: base64.b64decode(value).decode() for key, value in data.items()}

    filled_data: dict[str, str] = eventually(filled, 20, "the token controller")
    return filled_data


def test_the_access_token_secret_is_filled_for_mkq_manager_access(
    access_token: dict[str, str],
) -> None:
    assert access_token["namespace"] == NAMESPACE
    assert access_token["token"].count(".") == 2, "a ServiceAccount JWT"
    assert "BEGIN CERTIFICATE" in access_token["ca.crt"]


@pytest.fixture
def worker_kubeconfig(real: RealCluster, access_token: dict[str, str], tmp_path: Path) -> Path:
    """The kubeconfig README step 4 builds for the manager from the token Secret."""
    ca = tmp_path / "worker-ca.crt"
    ca.write_text(access_token["ca.crt"])
    path = tmp_path / "worker.kubeconfig"
    path.write_text(
        yaml.safe_dump(
            kubeconfig_document(
                "worker-1", real.server, ca, "mkq-manager", {"token": access_token["token"]}
            )
        )
    )
    return path


def test_the_readme_kubeconfig_from_the_token_acts_as_mkq_manager_access(
    kubectl: RealKubectl, worker_kubeconfig: Path
) -> None:
    """No impersonation: the token itself authenticates, and the server answers for it."""
    manager = RealKubectl(worker_kubeconfig, kubectl.cache_dir)
    review = manager.json("auth", "whoami")
    assert review["status"]["userInfo"]["username"] == f"{SA}:mkq-manager-access"
    assert manager.ok("auth", "can-i", "create", "jobs.batch", "-n", "team-a").strip() == "yes"
    denied = manager("auth", "can-i", "get", "secrets", "-n", NAMESPACE)
    assert denied.out.strip() == "no", denied
    assert manager.ok("get", "workloads.kueue.x-k8s.io", "--all-namespaces") is not None
    refused = manager("get", "secrets", "-n", NAMESPACE)
    assert refused.code != 0 and "Forbidden" in refused.err, refused
