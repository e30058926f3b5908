"""The control plane's programs, built from their Go modules by the ordinary `go` tool and cached.

Each Go module the tests run lives in `scripts/realk8s/<module>/go.mod`, which pins its version
(and `tool` lines name its programs). A build goes to
`$MKQ_CACHE_DIR/realk8s/<module>-<version>-<hash of go.mod and go.sum>/`, so a second run finds
the programs at once, and a change of version or dependency builds afresh. Nothing of the
modules' source is in this repository: `go` fetches it from the module proxy.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODULES = REPO / "scripts" / "realk8s"


class BuildError(RuntimeError):
    """A module could not be built; the message says what to do."""


@dataclass(frozen=True)
class GoModule:
    """One pinned Go module: its directory here, the module it requires, and its programs."""

    directory: str
    module: str
    programs: tuple[str, ...]  # package paths of the `tool` lines
    root: Path = MODULES  # the folder holding `directory`

    @property
    def path(self) -> Path:
        return self.root / self.directory

    @property
    def version(self) -> str:
        found = re.search(
            rf"^\s*(?:require\s+)?{re.escape(self.module)}\s+(v\S+)",
            (self.path / "go.mod").read_text(),
            re.MULTILINE,
        )
        if found is None:
            raise BuildError(f"{self.path / 'go.mod'}: no version of {self.module} required")
        return found.group(1)

    def ldflags(self) -> str:
        """Strip symbols; a Kubernetes build also says its release, as the official ones do."""
        flags = ["-s", "-w"]
        if self.module == "k8s.io/kubernetes":
            major, minor = self.version.lstrip("v").split(".")[:2]
            for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
                flags += [
                    f"-X {package}.gitVersion={self.version}",
                    f"-X {package}.gitMajor={major}",
                    f"-X {package}.gitMinor={minor}",
                    f"-X {package}.gitTreeState=clean",
                    f"-X {package}.buildDate=1970-01-01T00:00:00Z",
                ]
        return " ".join(flags)


KUBERNETES = GoModule(
    "kubernetes",
    "k8s.io/kubernetes",
    (
        "k8s.io/kubernetes/cmd/kube-apiserver",
        "k8s.io/kubernetes/cmd/kube-controller-manager",
        "k8s.io/kubernetes/cmd/kube-scheduler",
    ),
)
ETCD = GoModule("etcd", "go.etcd.io/etcd/server/v3", ("go.etcd.io/etcd/server/v3",))
KWOK = GoModule("kwok", "sigs.k8s.io/kwok", ("sigs.k8s.io/kwok/cmd/kwok",))
CONTROL_PLANE = (ETCD, KUBERNETES, KWOK)
# Modules whose files (CRDs) the tests install; nothing is built from them.
AUTOSCALER_APIS = GoModule("autoscaler", "k8s.io/autoscaler/cluster-autoscaler/apis", ())
PROVISIONING_REQUEST_CRD = (
    AUTOSCALER_APIS,
    "config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml",
)
# JobSet's own controller, and its CRD and webhook configurations, from one module.
JOBSET = GoModule("jobset", "sigs.k8s.io/jobset", ("sigs.k8s.io/jobset",))
JOBSET_CRD = (JOBSET, "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml")
JOBSET_WEBHOOKS = (JOBSET, "config/components/webhook/manifests.yaml")
# Kubeflow's training operator (the v1 jobs: PyTorchJob, TFJob, JAXJob, PaddleJob,
# XGBoostJob), its CRDs and webhook configuration, from one module. Its MPIJob v1 is left out:
# Kueue runs MPIJob v2beta1 of the MPI operator under the same name.
TRAINING_OPERATOR = GoModule(
    "training-operator",
    "github.com/kubeflow/training-operator",
    ("github.com/kubeflow/training-operator/cmd/training-operator.v1",),
)
KUBEFLOW_PLURALS = ("pytorchjobs", "tfjobs", "jaxjobs", "paddlejobs", "xgboostjobs")
KUBEFLOW_CRDS = tuple(
    (TRAINING_OPERATOR, f"manifests/base/crds/kubeflow.org_{plural}.yaml")
    for plural in KUBEFLOW_PLURALS
)
KUBEFLOW_WEBHOOKS = (TRAINING_OPERATOR, "manifests/base/webhook/manifests.yaml")
# Kubeflow's MPI operator (MPIJob kubeflow.org/v2beta1, the version Kueue runs), and its CRD,
# from one module. It has no webhooks.
MPI_OPERATOR = GoModule(
    "mpi-operator",
    "github.com/kubeflow/mpi-operator",
    ("github.com/kubeflow/mpi-operator/cmd/mpi-operator",),
)
MPIJOB_CRD = (MPI_OPERATOR, "manifests/base/kubeflow.org_mpijobs.yaml")
# KubeRay's ray-operator (RayJob and RayCluster ray.io/v1, the kinds Kueue runs), and its
# CRDs, from one module: RayService's too, which its controller waits for (and exits without).
# Its webhooks are off by default, as in its Helm chart.
KUBERAY = GoModule(
    "kuberay",
    "github.com/ray-project/kuberay/ray-operator",
    ("github.com/ray-project/kuberay/ray-operator",),
)
RAY_PLURALS = ("rayclusters", "rayjobs", "rayservices")
RAY_CRDS = tuple((KUBERAY, f"config/crd/bases/ray.io_{plural}.yaml") for plural in RAY_PLURALS)
# LeaderWorkerSet's controller (leaderworkerset.x-k8s.io/v1, the version Kueue runs; Kueue
# v0.17.0's go.mod pins this release), and its CRD and webhook configurations, from one
# module. Its main package is cmd/ (cmd/main.go), built as `lws` (_program_name).
LWS = GoModule("lws", "sigs.k8s.io/lws", ("sigs.k8s.io/lws/cmd",))
LWS_CRD = (LWS, "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml")
LWS_WEBHOOKS = (LWS, "config/webhook/manifests.yaml")
MODULE_FILES = (
    PROVISIONING_REQUEST_CRD,
    JOBSET_CRD,
    JOBSET_WEBHOOKS,
    *KUBEFLOW_CRDS,
    KUBEFLOW_WEBHOOKS,
    MPIJOB_CRD,
    *RAY_CRDS,
    LWS_CRD,
    LWS_WEBHOOKS,
)
# Kueue itself, the peer the benchmarks and the decision oracle hold mkq against
# (bench/peers/kueue/go.mod pins the release); its CRDs come from the same module.
KUEUE = GoModule(
    "kueue",
    "sigs.k8s.io/kueue",
    (
        "sigs.k8s.io/kueue/cmd/kueue",
        # The programs of Kueue's scheduler benchmark (test/performance/scheduler): its runner
        # (generator, recorder, envtest) and minimalkueue (Kueue's core controllers and
        # scheduler alone), which `mkq bench compare` runs beside mkq.
        "sigs.k8s.io/kueue/test/performance/scheduler/runner",
        "sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue",
    ),
    root=REPO / "bench" / "peers",
)
KUEUE_CRD_PLURALS = (
    "admissionchecks",
    "clusterqueues",
    "cohorts",
    "localqueues",
    "multikueueclusters",
    "multikueueconfigs",
    "provisioningrequestconfigs",
    "resourceflavors",
    "topologies",
    "workloadpriorityclasses",
    "workloads",
)
KUEUE_CRDS = tuple(
    (KUEUE, f"config/components/crd/bases/kueue.x-k8s.io_{plural}.yaml")
    for plural in KUEUE_CRD_PLURALS
)
# Programs beside the control planes: the real operators of job kinds, and Kueue itself (the
# oracle's and the benchmarks' peer). `mkq realk8s build` builds them all before the tests, so
# no test's deadline pays for a cold build (Kueue's takes about 5 minutes).
PEERS = (JOBSET, TRAINING_OPERATOR, MPI_OPERATOR, KUBERAY, LWS, KUEUE)
# The program names the cluster starter asks for, and the module each comes from.
PROGRAMS = {
    "etcd": ETCD,
    "kube-apiserver": KUBERNETES,
    "kube-controller-manager": KUBERNETES,
    "kube-scheduler": KUBERNETES,
    "kwok": KWOK,
}


def cache_root() -> Path:
    explicit = os.environ.get("MKQ_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mkq"


# Programs whose package's last element does not name them: etcd's is `v3`, and LWS's main
# package is its module's cmd/ (`go build` would call it `cmd`).
_PROGRAM_NAMES = {ETCD.module: "etcd", f"{LWS.module}/cmd": "lws"}


def _program_name(package: str) -> str:
    """`go build -o DIR/` names a binary after the package's last element; a few are named
    here instead (_PROGRAM_NAMES)."""
    last = package.rstrip("/").split("/")[-1]
    return _PROGRAM_NAMES.get(package, last)


def build_directory(module: GoModule) -> Path:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum"):
        digest.update((module.path / name).read_bytes())
    key = f"{module.directory}-{module.version}-{digest.hexdigest()[:12]}"
    return cache_root() / "realk8s" / key


def ensure_built(module: GoModule, *, log: bool = True) -> Path:
    """The directory of the module's programs, built first when the cache has none."""
    target = build_directory(module)
    wanted = [_program_name(p) for p in module.programs]
    if all((target / name).is_file() for name in wanted):
        return target
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "the real control planes are built with Go: install Go 1.26 or newer "
            "(Debian: golang-go) and put `go` on PATH"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    started = time.monotonic()
    if log:
        print(
            f"building {', '.join(wanted)} from {module.module}@{module.version} "
            f"(cached in {target}; the first build takes minutes)",
            file=sys.stderr,
            flush=True,
        )
    try:
        for package in module.programs:
            # One package at a time: `go build -o` of several main packages names etcd's `v3`.
            result = subprocess.run(
                [
                    go,
                    "build",
                    "-buildvcs=false",
                    "-ldflags",
                    module.ldflags(),
                    "-o",
                    str(scratch / _program_name(package)),
                    package,
                ],
                cwd=module.path,
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                raise BuildError(
                    f"go build {package} (in {module.path}) failed:\n{result.stderr[-4000:]}"
                )
        if target.exists():
            shutil.rmtree(target)
        scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if log:
        print(
            f"built {module.module}@{module.version} in {time.monotonic() - started:.0f}s",
            file=sys.stderr,
            flush=True,
        )
    return target


def program(name: str) -> Path:
    """The path of one control-plane program, building its module when needed."""
    return ensure_built(PROGRAMS[name]) / name


def ensure_control_plane() -> dict[str, Path]:
    """Every control-plane program, built or found in the cache."""
    for module in CONTROL_PLANE:
        ensure_built(module)
    return {name: build_directory(module) / name for name, module in PROGRAMS.items()}


def ensure_peers() -> dict[str, Path]:
    """Every program of PEERS (the job kinds' own operators, Kueue), built or found cached."""
    found: dict[str, Path] = {}
    for module in PEERS:
        directory = ensure_built(module)
        for package in module.programs:
            found[_program_name(package)] = directory / _program_name(package)
    return found


def module_file(module: GoModule, relative: str) -> Path:
    """A file of a pinned module's source, fetched through the module proxy (and verified
    against the go.sum beside its go.mod) into Go's module cache the first time."""
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            f"{module.module}'s files come through Go's module proxy: install Go 1.26 or "
            "newer (Debian: golang-go) and put `go` on PATH"
        )
    result = subprocess.run(
        [go, "mod", "download", "-json", module.module],
        cwd=module.path,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        directory = Path(json.loads(result.stdout)["Dir"])
    except (ValueError, KeyError):
        raise BuildError(
            f"go mod download {module.module}@{module.version} (in {module.path}) failed:\n"
            f"{(result.stderr or result.stdout)[-4000:]}"
        ) from None
    path = directory / relative
    if not path.is_file():
        raise BuildError(f"{module.module}@{module.version} has no file {relative}")
    return path


def ensure_module_files() -> list[Path]:
    """Every module file the tests install, fetched or found in the module cache."""
    return [module_file(module, relative) for module, relative in MODULE_FILES]
