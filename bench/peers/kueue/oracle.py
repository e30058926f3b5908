"""The decision oracle: a scenario of `mkq simulate`'s format decided by Kueue itself.

    python -m bench.peers.kueue.oracle FILE... [--keep DIR]

starts a real control plane (mkq/realk8s) with Kueue's CRDs, applies the scenario's objects
(a last `Expectation` document of a test is ignored), then starts Kueue's manager (peer.py),
opens the gate (below) so that its scheduler meets the scenario as a whole, as `mkq simulate`
does, waits until nothing changes, and prints the same JSON as `mkq simulate`: admitted,
quotaReserved, clusterQueue, podSets (flavors, count, resourceUsage, topologyAssignment
expanded), evictions, reason and message.

How the scenario becomes objects:
- Namespaces are applied server-side (they may exist from a previous scenario); every other
  object is created fresh, its `status` (Nodes, Pods, AdmissionChecks, admitted Workloads)
  written through the status subresource afterwards.
- No Kueue webhook is registered, so Workloads are written as Kueue's defaulting would leave
  them: the CRD's own defaults (podSet name, count) are applied by kube-apiserver, and
  `spec.priority` is resolved from `priorityClassRef` as Kueue's job reconciler does.
- kube-apiserver sets creationTimestamp itself, to the second. Kueue orders pending Workloads
  by priority, then creation time, and compares creation times in preemption, so Workloads
  are created in the scenario's order of creationTimestamp, a later timestamp waiting for the
  next second of the clock. Other times (conditions' lastTransitionTime) are written as the
  scenario gives them, so they do not line up with creation times (agreement.md).
- The gate: every ClusterQueue also names a flavor with no quota (GATE_FLAVOR) that exists
  only once Kueue has loaded everything; its creation activates all ClusterQueues in one step
  of Kueue's cache. (Kueue leaves inactive ClusterQueues out of its snapshot, so releasing them
  one at a time would schedule the first against a partial cohort.)
- Evicted Workloads have no job to stop, so the oracle does what Kueue's job reconciler does
  once a job has stopped: it clears the admission (quota given back, the Workload pending).
- Nodes are plain Node objects with the scenario's status (no kubelet, no heartbeat), created
  right before Kueue starts; a Node without conditions is given Ready=True.

`Oracle` keeps one control plane for many scenarios (`mkq bench agree`): between two, every
object of the previous one is removed (finalizers dropped; Kueue is not running then), which
costs well under a second where a fresh control plane costs about ten.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

import kueue_api as api
from bench.peers.kueue.peer import install_kueue_crds, kueue_manager
from kueue_api.models.config import DEFAULT_PREEMPTION_STRATEGIES
from mkq.realk8s.clusters import RealCluster, clusters_running

KUEUE_PREFIX = "/apis/kueue.x-k8s.io/v1beta2"
FIELD_MANAGER = "mkq-oracle"
STABLE_SECONDS = 3.0
SETTLE_TIMEOUT = 120.0
POLL_SECONDS = 0.25
NAMESPACED = {"LocalQueue", "Workload", "Pod", "ResourceClaim", "ResourceClaimTemplate"}
# The order objects are created in: what a later kind refers to comes first.
CREATION_ORDER = (
    "Namespace",
    "PriorityClass",
    "WorkloadPriorityClass",
    "DeviceClass",
    "ResourceFlavor",
    "Topology",
    "Cohort",
    "AdmissionCheck",
    "ClusterQueue",
    "LocalQueue",
    "Node",
    "ResourceSlice",
    "Pod",
    "ResourceClaimTemplate",
    "ResourceClaim",
)
# What a scenario may leave behind, removed in this order before the next one.
CLEANUP = (
    (KUEUE_PREFIX, "workloads", True),
    (KUEUE_PREFIX, "localqueues", True),
    (KUEUE_PREFIX, "clusterqueues", False),
    (KUEUE_PREFIX, "cohorts", False),
    (KUEUE_PREFIX, "admissionchecks", False),
    (KUEUE_PREFIX, "resourceflavors", False),
    (KUEUE_PREFIX, "topologies", False),
    (KUEUE_PREFIX, "workloadpriorityclasses", False),
    ("/api/v1", "pods", True),
    ("/api/v1", "nodes", False),
    ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    ("/apis/resource.k8s.io/v1", "resourceslices", False),
    ("/apis/resource.k8s.io/v1", "deviceclasses", False),
)


class OracleError(RuntimeError):
    """A scenario could not be applied or did not settle; the message says which and why."""


def scenario_documents(path: Path) -> list[dict[str, Any]]:
    """The scenario's objects, without a test's `Expectation` document."""
    return [
        doc
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict) and doc.get("kind") != "Expectation"
    ]


def _plural(kind: str) -> str:
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + ("es" if lower.endswith("s") else "s")


def _collection(doc: dict[str, Any]) -> str:
    version = doc["apiVersion"]
    prefix = "/api/v1" if version == "v1" else f"/apis/{version}"
    namespace = (doc.get("metadata") or {}).get("namespace")
    if doc["kind"] in NAMESPACED:
        namespace = namespace or "default"
        return f"{prefix}/namespaces/{namespace}/{_plural(doc['kind'])}"
    return f"{prefix}/{_plural(doc['kind'])}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check(response: httpx.Response, what: str) -> dict[str, Any]:
    if response.status_code >= 300:
        raise OracleError(f"{what}: {response.status_code} {response.text[:500]}")
    body: dict[str, Any] = response.json()
    return body


def _completed_conditions(status: dict[str, Any], *, heartbeat: bool = False) -> dict[str, Any]:
    """Conditions with the fields the API requires, times set to now where missing."""
    conditions = []
    for condition in status.get("conditions") or []:
        filled = {"reason": condition["type"], "message": "", **condition}
        filled.setdefault("lastTransitionTime", _now())
        if heartbeat:
            filled["lastHeartbeatTime"] = _now()
        conditions.append(filled)
    return {**status, "conditions": conditions} if conditions else status


def _fresh(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` as a new object: no status (written after), no server-owned metadata."""
    body = {k: v for k, v in doc.items() if k != "status"}
    metadata = dict(doc.get("metadata") or {})
    for field in ("creationTimestamp", "uid", "resourceVersion", "generation"):
        metadata.pop(field, None)
    body["metadata"] = metadata
    return body


def _create(http: httpx.Client, doc: dict[str, Any]) -> None:
    collection = _collection(doc)
    name = doc["metadata"]["name"]
    if doc["kind"] == "Namespace":
        _check(
            http.patch(
                f"{collection}/{name}",
                params={"fieldManager": FIELD_MANAGER, "force": "true"},
                content=json.dumps(_fresh(doc)),
                headers={"Content-Type": "application/apply-patch+yaml"},
            ),
            f"Namespace {name}",
        )
        return
    _check(http.post(collection, json=_fresh(doc)), f"{doc['kind']} {name}")
    status = doc.get("status")
    if doc["kind"] == "Node":
        status = dict(status or {})
        status.setdefault("conditions", [{"type": "Ready", "status": "True"}])
    if status:
        status = _completed_conditions(status, heartbeat=doc["kind"] == "Node")
        _check(
            http.patch(
                f"{collection}/{name}/status",
                content=json.dumps({"status": status}),
                headers={"Content-Type": "application/merge-patch+json"},
            ),
            f"{doc['kind']} {name} status",
        )


def _priority(doc: dict[str, Any], values: dict[tuple[str, str], int]) -> dict[str, Any]:
    """The Workload with spec.priority resolved from its priorityClassRef, as Kueue's job
    reconciler writes it (a Workload nobody resolved has priority 0 in Kueue's queues)."""
    spec = doc.get("spec") or {}
    ref = spec.get("priorityClassRef")
    if spec.get("priority") is not None or not ref:
        return doc
    value = values.get((ref.get("kind", ""), ref.get("name", "")))
    if value is None:
        return doc
    return {**doc, "spec": {**spec, "priority": value}}


def _created_at(doc: dict[str, Any]) -> str:
    return str((doc.get("metadata") or {}).get("creationTimestamp") or "")


def _create_workloads(http: httpx.Client, docs: Sequence[dict[str, Any]]) -> None:
    """Every Workload (admitted ones with their status) in order of creationTimestamp, a
    later timestamp a later second of kube-apiserver's clock: Kueue compares the creation
    times of pending and admitted Workloads too (LowerOrNewerEqualPriority)."""
    values = {
        (d["kind"], d["metadata"]["name"]): int(d.get("value", 0))
        for d in docs
        if d["kind"] in ("WorkloadPriorityClass", "PriorityClass")
    }
    workloads = sorted(
        (_priority(d, values) for d in docs if d["kind"] == "Workload"), key=_created_at
    )
    previous: str | None = None
    for workload in workloads:
        stamp = _created_at(workload)
        if previous is not None and stamp != previous:
            time.sleep(1.0 - time.time() % 1.0 + 0.02)
        previous = stamp
        _create(http, workload)


GATE_FLAVOR = "mkq-oracle-gate"
MAX_FLAVORS = 16  # per resource group, as the CRD allows


def _gate_name(flavor: str | None) -> str:
    return GATE_FLAVOR if flavor is None else f"{GATE_FLAVOR}-{flavor}"


def _gated(doc: dict[str, Any], tas: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A ClusterQueue that also names a gate flavor (last, with no quota) in its first
    resource group with room (a flavor may be in one group only), so that it stays inactive
    until that flavor exists (release_gate). A flavor with no quota, tried last, changes no
    decision; where the group's flavors are TAS flavors (`tas`: their specs by name), the
    gate is a copy of the first one, since Kueue treats a podSet without a topology request as
    TAS only in a ClusterQueue whose flavors all are."""
    spec = doc.get("spec") or {}
    if doc["kind"] != "ClusterQueue":
        return doc
    groups = [dict(group) for group in spec.get("resourceGroups") or []]
    for group in groups:
        flavors = list(group.get("flavors") or [])
        if len(flavors) < MAX_FLAVORS:
            names = [f["name"] for f in flavors if f.get("name") in tas]
            gate = _gate_name(names[0] if names and len(names) == len(flavors) else None)
            quota = [{"name": r, "nominalQuota": "0"} for r in group.get("coveredResources", [])]
            group["flavors"] = [*flavors, {"name": gate, "resources": quota}]
            break
    return {**doc, "spec": {**spec, "resourceGroups": groups}}


def apply_scenario(http: httpx.Client, docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every object of the scenario but its Configuration, in CREATION_ORDER, ClusterQueues
    gated (_gated); returns the gate flavors to create."""
    rank = {kind: i for i, kind in enumerate(CREATION_ORDER)}
    unknown = sorted(
        {d["kind"] for d in docs} - set(rank) - {"Workload", "Configuration", "Expectation"}
    )
    if unknown:
        raise OracleError(f"the oracle cannot apply kinds {', '.join(unknown)}")
    others = sorted((d for d in docs if d["kind"] in rank), key=lambda d: rank[d["kind"]])
    tas = {
        d["metadata"]["name"]: d["spec"]
        for d in docs
        if d["kind"] == "ResourceFlavor" and (d.get("spec") or {}).get("topologyName")
    }
    gates: list[dict[str, Any]] = []
    for doc in others:
        gated = _gated(doc, tas)
        gates += [
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": f["name"]},
                "spec": tas.get(f["name"].removeprefix(GATE_FLAVOR).removeprefix("-"), {}),
            }
            for group in (gated.get("spec") or {}).get("resourceGroups") or []
            for f in group.get("flavors") or []
            if f["name"].startswith(GATE_FLAVOR)
            and f["name"] not in {g["metadata"]["name"] for g in gates}
        ]
        _create(http, gated)
    _create_workloads(http, docs)
    return gates


def _known(cluster_queue: dict[str, Any]) -> bool:
    """Kueue's controller has written the ClusterQueue's status (it is in Kueue's cache)."""
    return _condition(cluster_queue.get("status") or {}, "Active") is not None


def release_gate(
    http: httpx.Client, gates: Sequence[dict[str, Any]], process: Any, log: Path
) -> None:
    """Once Kueue knows every ClusterQueue (and so every Workload queued in them), create
    GATE_FLAVOR: Kueue's cache then activates every ClusterQueue in one step, so its scheduler
    meets the scenario as a whole, as the engine does. (Releasing ClusterQueues one by one
    would not do: Kueue leaves inactive ClusterQueues out of its snapshot, so the first ones
    released would be scheduled against a cohort without the others.)"""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while not all(_known(cq) for cq in _items(http, KUEUE_PREFIX, "clusterqueues")):
        if process.poll() is not None:
            raise OracleError(f"Kueue's manager exited ({process.returncode}); see {log}")
        if time.monotonic() > deadline:
            raise OracleError(f"Kueue did not report on every ClusterQueue in time; see {log}")
        time.sleep(POLL_SECONDS)
    time.sleep(0.5)  # the Workload informer has synced with the rest; its events are queued
    for gate in gates:
        _check(
            http.post(f"{KUEUE_PREFIX}/resourceflavors", json=gate),
            f"creating gate {gate['metadata']['name']}",
        )


def _items(http: httpx.Client, prefix: str, plural: str) -> list[dict[str, Any]]:
    response = http.get(f"{prefix}/{plural}")
    deadline = time.monotonic() + 30
    while response.status_code == 429 and time.monotonic() < deadline:
        time.sleep(0.5)  # a CRD just established: "storage is (re)initializing"
        response = http.get(f"{prefix}/{plural}")
    if response.status_code == 404:
        return []  # an API this control plane does not serve
    items: list[dict[str, Any]] = _check(response, f"list {plural}").get("items", [])
    return items


def remove_everything(http: httpx.Client) -> None:
    """Every object a scenario may have made, gone (finalizers dropped first)."""
    for prefix, plural, namespaced in CLEANUP:
        for item in _items(http, prefix, plural):
            meta = item["metadata"]
            path = (
                f"{prefix}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"
                if namespaced
                else f"{prefix}/{plural}/{meta['name']}"
            )
            if meta.get("finalizers"):
                http.patch(
                    path,
                    content=json.dumps({"metadata": {"finalizers": None}}),
                    headers={"Content-Type": "application/merge-patch+json"},
                )
            http.delete(path, params={"gracePeriodSeconds": "0"})
    deadline = time.monotonic() + 60
    while any(_items(http, prefix, plural) for prefix, plural, _ in CLEANUP):
        if time.monotonic() > deadline:
            raise OracleError("the previous scenario's objects are not gone after 60s")
        time.sleep(0.1)


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            found: dict[str, Any] = condition
            return found
    return None


def _true(status: dict[str, Any], kind: str) -> bool:
    condition = _condition(status, kind)
    return condition is not None and condition.get("status") == "True"


def _expanded(topology: dict[str, Any]) -> dict[str, Any]:
    assignment = api.TopologyAssignment.model_validate(topology)
    return {
        "levels": list(assignment.levels),
        "domains": [
            {"values": list(domain.values), "count": domain.count}
            for domain in assignment.domains()
        ],
    }


def _evictions(status: dict[str, Any], by_uid: dict[str, str]) -> list[dict[str, str]]:
    """The last eviction Kueue's conditions still show, with its preemptor when preempted."""
    evicted = _condition(status, "Evicted")
    if evicted is None or evicted.get("status") != "True":
        preempted = _condition(status, "Preempted")
        if preempted is None:
            return []
        evicted = {"reason": "Preempted"}
    reason = str(evicted.get("reason", ""))
    by = ""
    preempted = _condition(status, "Preempted")
    if reason == "Preempted" and preempted is not None:
        message = str(preempted.get("message", ""))
        marker = "(UID: "
        if marker in message:
            uid = message.split(marker, 1)[1].split(",", 1)[0]
            by = by_uid.get(uid, uid)
    return [{"reason": reason, "by": by}]


def workload_report(workload: dict[str, Any], by_uid: dict[str, str]) -> dict[str, Any]:
    """One Workload in `mkq simulate`'s shape (worker_agent.engine.report.workload_json)."""
    status = workload.get("status") or {}
    admission = status.get("admission")
    reserved = _true(status, "QuotaReserved") and admission is not None
    out: dict[str, Any] = {"admitted": _true(status, "Admitted"), "quotaReserved": reserved}
    checks = status.get("admissionChecks") or []
    if checks:
        out["admissionChecks"] = {
            c["name"]: {
                "state": c.get("state", ""),
                **({"message": c["message"]} if c.get("message") else {}),
            }
            for c in checks
        }
    if reserved:
        out["clusterQueue"] = admission["clusterQueue"]
        pod_sets: dict[str, Any] = {}
        for psa in admission.get("podSetAssignments") or []:
            entry: dict[str, Any] = {
                "flavors": dict(psa.get("flavors") or {}),
                "count": psa.get("count"),
                "resourceUsage": dict(psa.get("resourceUsage") or {}),
            }
            if psa.get("topologyAssignment"):
                entry["topologyAssignment"] = _expanded(psa["topologyAssignment"])
            pod_sets[psa["name"]] = entry
        out["podSets"] = pod_sets
    out["evictions"] = _evictions(status, by_uid)
    if not reserved:
        condition = _condition(status, "QuotaReserved") or {}
        out["reason"] = condition.get("reason", "")
        out["message"] = condition.get("message", "")
    elif not out["admitted"]:
        condition = _condition(status, "Admitted") or {}
        out["reason"] = condition.get("reason", "")
        out["message"] = condition.get("message", "")
    return out


def report(http: httpx.Client) -> dict[str, Any]:
    """Every Workload of the cluster in `mkq simulate`'s JSON."""
    workloads = _items(http, KUEUE_PREFIX, "workloads")
    by_uid = {
        w["metadata"]["uid"]: f"{w['metadata']['namespace']}/{w['metadata']['name']}"
        for w in workloads
    }
    found = {
        f"{w['metadata']['namespace']}/{w['metadata']['name']}": workload_report(w, by_uid)
        for w in workloads
    }
    return {"workloads": {key: found[key] for key in sorted(found)}}


def _set_condition(status: dict[str, Any], condition: dict[str, Any]) -> None:
    conditions = [c for c in status.get("conditions") or [] if c["type"] != condition["type"]]
    status["conditions"] = [*conditions, {"lastTransitionTime": _now(), **condition}]


def stop_evicted(http: httpx.Client) -> bool:
    """Do for evicted Workloads what Kueue's job reconciler does once their job has stopped
    (the scenario's Workloads have no job): give the quota back, so the Workload is pending
    again (workload.UnsetQuotaReservationWithCondition). Returns whether any changed."""
    changed = False
    for workload in _items(http, KUEUE_PREFIX, "workloads"):
        status = workload.get("status") or {}
        evicted = _condition(status, "Evicted")
        if evicted is None or evicted.get("status") != "True" or not _true(status, "QuotaReserved"):
            continue
        status = {**status, "admission": None}
        _set_condition(
            status,
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": evicted.get("message", ""),
            },
        )
        if _true(status, "Admitted"):
            _set_condition(
                status,
                {
                    "type": "Admitted",
                    "status": "False",
                    "reason": "NoReservation",
                    "message": "The workload has no reservation",
                },
            )
        meta = workload["metadata"]
        response = http.put(
            f"{KUEUE_PREFIX}/namespaces/{meta['namespace']}/workloads/{meta['name']}/status",
            json={**workload, "status": status},
        )
        if response.status_code == 409:
            continue  # Kueue wrote it meanwhile; the next poll sees it again
        _check(response, f"stopping evicted Workload {meta['namespace']}/{meta['name']}")
        changed = True
    return changed


def settle(http: httpx.Client, process: Any, log: Path) -> dict[str, Any]:
    """The report once it has not changed for STABLE_SECONDS."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    last = report(http)
    since = time.monotonic()
    while time.monotonic() - since < STABLE_SECONDS:
        if process.poll() is not None:
            raise OracleError(f"Kueue's manager exited ({process.returncode}); see {log}")
        if time.monotonic() > deadline:
            raise OracleError(f"Kueue's decisions still change after {SETTLE_TIMEOUT:.0f}s")
        time.sleep(POLL_SECONDS)
        if stop_evicted(http):
            since = time.monotonic()
            continue
        current = report(http)
        if current != last:
            last, since = current, time.monotonic()
    return last


def _configuration(docs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The scenario's Configuration for Kueue. Kueue v0.17 requires
    fairSharing.preemptionStrategies where mkq (like Kueue's v1beta1) defaults them: the
    oracle gives Kueue mkq's default rather than fail (agreement.md lists the difference)."""
    for doc in docs:
        if doc.get("kind") == "Configuration":
            fair_sharing = doc.get("fairSharing")
            if isinstance(fair_sharing, dict) and not fair_sharing.get("preemptionStrategies"):
                strategies = list(DEFAULT_PREEMPTION_STRATEGIES)
                return {**doc, "fairSharing": {**fair_sharing, "preemptionStrategies": strategies}}
            return doc
    return None


class Oracle:
    """One control plane with Kueue's CRDs, deciding scenarios one after another."""

    def __init__(self, cluster: RealCluster, directory: Path) -> None:
        self.cluster = cluster
        self.directory = directory
        self.runs = 0
        install_kueue_crds(cluster)

    def decide(self, path: Path) -> dict[str, Any]:
        """Kueue's decisions on the scenario in `path`, in `mkq simulate`'s JSON."""
        docs = scenario_documents(path)
        self.runs += 1
        run_directory = self.directory / f"run-{self.runs:04d}"
        with self.cluster.admin_http(timeout=30.0) as http:
            remove_everything(http)
            gates = apply_scenario(http, docs)
            log = run_directory / "kueue.log"
            with kueue_manager(self.cluster, run_directory, _configuration(docs)) as process:
                release_gate(http, gates, process, log)
                return settle(http, process, log)


@contextlib.contextmanager
def oracle(directory: Path | None = None) -> Iterator[Oracle]:
    """An Oracle on a control plane started for the length of a block (its files in
    `directory`, or a temporary one removed afterwards)."""
    with contextlib.ExitStack() as stack:
        if directory is None:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mkq-oracle-")))
        clusters = stack.enter_context(clusters_running(directory / "clusters", ["oracle"]))
        yield Oracle(clusters["oracle"], directory)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers.kueue.oracle",
        description="Kueue's own decisions on scenario FILEs, in `mkq simulate`'s JSON.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.add_argument("--keep", type=Path, help="keep the control plane's and Kueue's files here")
    args = parser.parse_args(argv)
    with oracle(args.keep) as kueue:
        reports = {str(path): kueue.decide(path) for path in args.files}
    if len(reports) == 1:
        print(json.dumps(next(iter(reports.values())), indent=2))
    else:
        print(json.dumps(reports, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
