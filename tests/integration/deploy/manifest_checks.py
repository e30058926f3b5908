"""Checks, by schema and by cross-reference, of the documents kubesim does not serve.

kubesim serves core and batch kinds and CRDs, not apps/v1 Deployments, Services or
rbac.authorization.k8s.io, so kubectl cannot dry-run those against it. These checks hold them
to the fields the API server requires and to what the rest of the rendering provides: the
Secrets, ConfigMaps and ServiceAccounts they name, and the `mkq` flags their containers pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from .cli_flags import check_mkq_args

Document = dict[str, Any]

RBAC = "rbac.authorization.k8s.io/v1"
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "*"}
UNSERVED_CHECKED = {
    ("apps/v1", "Deployment"),
    ("v1", "Service"),
    (RBAC, "ClusterRole"),
    (RBAC, "Role"),
    (RBAC, "ClusterRoleBinding"),
    (RBAC, "RoleBinding"),
}


class Rendering:
    """One rendered overlay, indexed by kind and name."""

    def __init__(self, docs: list[Document]) -> None:
        self.docs = docs

    def of_kind(self, kind: str) -> Iterator[Document]:
        return (d for d in self.docs if d.get("kind") == kind)

    def find(self, kind: str, name: str, namespace: str | None = None) -> Document | None:
        for doc in self.of_kind(kind):
            meta = doc.get("metadata") or {}
            if meta.get("name") == name and (
                namespace is None or meta.get("namespace") == namespace
            ):
                return doc
        return None

    def data_keys(self, kind: str, name: str, namespace: str) -> set[str]:
        doc = self.find(kind, name, namespace)
        if doc is None:
            return set()
        return set(doc.get("data") or {}) | set(doc.get("stringData") or {})


def _where(doc: Document) -> str:
    meta = doc.get("metadata") or {}
    return f"{doc.get('kind')}/{meta.get('namespace', '')}/{meta.get('name')}"


def check(rendering: Rendering) -> list[str]:
    """Every problem found in the unserved documents of a rendering."""
    problems: list[str] = []
    for doc in rendering.docs:
        where = _where(doc)
        if not (doc.get("metadata") or {}).get("name"):
            problems.append(f"{where}: metadata.name is required")
        kind = doc.get("kind")
        if kind == "Deployment":
            problems += _deployment(rendering, doc, where)
        elif kind == "Service":
            problems += _service(rendering, doc, where)
        elif kind in ("ClusterRole", "Role"):
            problems += _role(doc, where)
        elif kind in ("ClusterRoleBinding", "RoleBinding"):
            problems += _binding(rendering, doc, where)
    return problems


def _deployment(rendering: Rendering, doc: Document, where: str) -> list[str]:
    problems: list[str] = []
    namespace = doc["metadata"].get("namespace", "default")
    spec = doc.get("spec") or {}
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    if not selector or any(labels.get(k) != v for k, v in selector.items()):
        problems.append(f"{where}: spec.selector.matchLabels must match the template's labels")
    pod = template.get("spec") or {}
    account = pod.get("serviceAccountName")
    if account and rendering.find("ServiceAccount", account, namespace) is None:
        problems.append(f"{where}: serviceAccountName {account} is not in the rendering")
    security = pod.get("securityContext") or {}
    if security.get("runAsNonRoot") is not True:
        problems.append(f"{where}: the pod must set securityContext.runAsNonRoot: true")
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    for volume in volumes.values():
        config_map = (volume.get("configMap") or {}).get("name")
        if config_map and rendering.find("ConfigMap", config_map, namespace) is None:
            problems.append(f"{where}: volume {volume['name']}: ConfigMap {config_map} missing")
    for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
        problems += _container(
            rendering, container, volumes, namespace, f"{where}: {container.get('name')}"
        )
    if not pod.get("containers"):
        problems.append(f"{where}: spec.template.spec.containers is required")
    return problems


def _container(
    rendering: Rendering,
    container: Document,
    volumes: dict[str, Document],
    namespace: str,
    where: str,
) -> list[str]:
    problems: list[str] = []
    for field in ("name", "image"):
        if not container.get(field):
            problems.append(f"{where}: {field} is required")
    if str(container.get("image", "")).endswith(":latest") and (
        container.get("imagePullPolicy") != "IfNotPresent"
    ):
        # `:latest` defaults to Always, which fails for an image loaded into kind by hand.
        problems.append(f"{where}: a :latest image needs imagePullPolicy: IfNotPresent")
    env: dict[str, Document] = {e["name"]: e for e in container.get("env") or []}
    for name, entry in env.items():
        ref = (entry.get("valueFrom") or {}).get("secretKeyRef")
        if ref and ref["key"] not in rendering.data_keys("Secret", ref["name"], namespace):
            problems.append(f"{where}: env {name}: Secret {ref['name']} has no key {ref['key']}")
    ports = {p.get("name") for p in container.get("ports") or []}
    for probe in ("readinessProbe", "livenessProbe"):
        port = ((container.get(probe) or {}).get("httpGet") or {}).get("port")
        if isinstance(port, str) and port not in ports:
            problems.append(f"{where}: {probe} names port {port}, which the container lacks")
    mounts = {m["mountPath"]: m for m in container.get("volumeMounts") or []}
    for mount in mounts.values():
        if mount["name"] not in volumes:
            problems.append(f"{where}: volumeMount {mount['name']} has no volume")
    if (container.get("securityContext") or {}).get("allowPrivilegeEscalation") is not False:
        problems.append(f"{where}: securityContext.allowPrivilegeEscalation must be false")
    args = [str(a) for a in container.get("args") or []]
    problems += check_mkq_args(args, env, where)
    problems += _kubeconfig_files(rendering, args, mounts, volumes, namespace, where)
    return problems


def _kubeconfig_files(
    rendering: Rendering,
    args: list[str],
    mounts: dict[str, Document],
    volumes: dict[str, Document],
    namespace: str,
    where: str,
) -> list[str]:
    """A `--kubeconfig PATH` must be a file a mounted ConfigMap or Secret provides, and parse."""
    if "--kubeconfig" not in args:
        return []
    path = args[args.index("--kubeconfig") + 1]
    directory, _, key = path.rpartition("/")
    mount = mounts.get(directory)
    if mount is None:
        return [f"{where}: --kubeconfig {path} is not under a volumeMount"]
    volume = volumes[mount["name"]]
    if "configMap" in volume:
        source = rendering.find("ConfigMap", volume["configMap"]["name"], namespace)
        text = ((source or {}).get("data") or {}).get(key)
    else:
        secret = rendering.find("Secret", volume["secret"]["secretName"], namespace)
        text = ((secret or {}).get("stringData") or {}).get(key)
    if text is None:
        return [f"{where}: --kubeconfig {path}: the mounted volume has no key {key}"]
    config = yaml.safe_load(text)
    contexts = {c["name"]: c["context"] for c in config.get("contexts") or []}
    context = contexts.get(config.get("current-context"))
    if context is None:
        return [f"{where}: --kubeconfig {path}: current-context names no context"]
    clusters = {c["name"] for c in config.get("clusters") or []}
    users = {u["name"] for u in config.get("users") or []}
    if context["cluster"] not in clusters or context["user"] not in users:
        return [f"{where}: --kubeconfig {path}: the context's cluster or user is missing"]
    return []


def _service(rendering: Rendering, doc: Document, where: str) -> list[str]:
    spec = doc.get("spec") or {}
    selector = spec.get("selector") or {}
    namespace = doc["metadata"].get("namespace", "default")
    for deployment in rendering.of_kind("Deployment"):
        if deployment["metadata"].get("namespace", "default") != namespace:
            continue
        template = deployment["spec"]["template"]
        labels = (template.get("metadata") or {}).get("labels") or {}
        if selector and all(labels.get(k) == v for k, v in selector.items()):
            ports = {
                p.get("name") for c in template["spec"]["containers"] for p in c.get("ports") or []
            }
            missing = [
                p
                for p in spec.get("ports") or []
                if isinstance(p.get("targetPort"), str) and p["targetPort"] not in ports
            ]
            if not spec.get("ports"):
                return [f"{where}: spec.ports is required"]
            return [f"{where}: targetPort {p['targetPort']} is no container port" for p in missing]
    return [f"{where}: spec.selector matches no Deployment's pods"]


def _role(doc: Document, where: str) -> list[str]:
    problems: list[str] = []
    if doc["kind"] == "Role" and not doc["metadata"].get("namespace"):
        problems.append(f"{where}: a Role needs a namespace")
    for index, rule in enumerate(doc.get("rules") or []):
        for field in ("apiGroups", "resources", "verbs"):
            if not isinstance(rule.get(field), list) or not rule[field]:
                problems.append(f"{where}: rules[{index}].{field} must be a non-empty list")
        unknown = set(rule.get("verbs") or []) - VERBS
        if unknown:
            problems.append(f"{where}: rules[{index}].verbs: unknown {sorted(unknown)}")
    return problems


def _binding(rendering: Rendering, doc: Document, where: str) -> list[str]:
    problems: list[str] = []
    ref = doc.get("roleRef") or {}
    if ref.get("apiGroup") != "rbac.authorization.k8s.io":
        problems.append(f"{where}: roleRef.apiGroup must be rbac.authorization.k8s.io")
    namespace = doc["metadata"].get("namespace")
    role_namespace = namespace if ref.get("kind") == "Role" else None
    if rendering.find(str(ref.get("kind")), str(ref.get("name")), role_namespace) is None:
        problems.append(f"{where}: roleRef {ref.get('kind')}/{ref.get('name')} is not rendered")
    for subject in doc.get("subjects") or []:
        if (
            subject.get("kind") == "ServiceAccount"
            and rendering.find("ServiceAccount", subject["name"], subject.get("namespace")) is None
        ):
            problems.append(f"{where}: subject ServiceAccount {subject['name']} is not rendered")
    if not doc.get("subjects"):
        problems.append(f"{where}: subjects is required")
    return problems
