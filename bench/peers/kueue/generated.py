"""Random scenarios for the decision oracle: cohorts, quotas, priorities and preemption.

    python -m bench.peers.kueue.generated --count N [--seed S] [--shape contended] --out DIR

writes N scenario files of `mkq simulate`'s format (`generated-<seed>-<index>.yaml`), each
decided by `mkq bench agree DIR` with mkq's engine and with Kueue itself. Every file is a pure
function of (seed, index), so a disagreement is reproduced from its name.

What a scenario draws (`Shape` holds the ranges):
- one or two ResourceFlavors, two to four ClusterQueues, each in the cohort (mostly) or alone,
  covering cpu with one or both flavors in either order; per flavor a nominal quota of 0-8 and
  sometimes a borrowing or lending limit;
- each ClusterQueue's preemption policy (withinClusterQueue, reclaimWithinCohort,
  borrowWithinCohort) and flavor fungibility;
- admitted Workloads (what fits, flavor by flavor, within each queue's quota and the cohort's),
  with distinct admission times;
- pending Workloads with priorities and creation times.

What it keeps out, because Kueue leaves the outcome to chance there and a disagreement would
say nothing: two pending Workloads with the same priority and creation time (Kueue's heap
breaks the tie arbitrarily, mkq by name), two admitted ones with the same priority and
admission time (preemption's candidate order ends in the Workloads' UIDs). Creation times take
at most three distinct seconds, as the oracle creates Workloads a second apart per distinct
time.

Two more shapes (`--shape tas`, `--shape fairsharing`; files `generated-<shape>-<seed>-<index>`,
each a pure function of (seed, index, shape)):

- `tas` (`_tas_scenario`): a Topology of block, rack and hostname; one or two TAS flavors, each
  selecting its own pool of Nodes (`pool: fN`), one or two blocks of one to three racks of one
  or two nodes of 1-4 cpu; one to three ClusterQueues (mostly in one cohort) with cpu quotas of
  those flavors; admitted Workloads placed on the nodes within their quota and the nodes' cpu
  (within one domain of a required level), and pending ones; every podSet has one to four pods
  (mostly more than one) and a topology request: required or preferred at any level,
  unconstrained, or none. Kueue's placement has no chance in it (domains of equal free
  capacity are taken in order of their values, `sortedDomains` in
  pkg/cache/scheduler/tas_flavor_snapshot.go), so the same rules as above suffice.
- `fairsharing`: the quota shape's queues and Workloads under a Configuration with fair
  sharing on (one of its preemption strategy lists), every ClusterQueue in the cohort (Kueue
  v0.17.0 crashes on fair-sharing preemption in a ClusterQueue without one) and with its own
  `fairSharing.weight`. Kueue's tournament (pkg/scheduler/fair_sharing_iterator.go) compares
  the heads' dominant resource shares, then priority, then queue-order time, and picks among
  equals by the order of a Go map, that is at random; its choice of preemption target queue
  (fairsharing/ordering.go) breaks equal shares by the candidates' order, which ends in UIDs.
  So no two shares may tie: weights are distinct and chosen (FAIR_WEIGHTS) so that borrowed /
  weight can only tie at borrowings no cohort here reaches, with at most one zero weight (two
  borrowing zero-weight queues compare by borrowing alone); queues that borrow nothing share
  0 and are told apart by their heads' (priority, creation time), unique as above; and the
  admitted Workloads have distinct priorities, since two of them evicted in the same second
  come back with equal queue-order times (conditions are written to the second).
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

KUEUE = "kueue.x-k8s.io/v1beta2"
BASE = "2025-01-01T00:00:{:02d}Z"
Obj = dict[str, Any]


@dataclass(frozen=True)
class Shape:
    """The ranges a scenario is drawn from."""

    flavors: tuple[int, int] = (1, 2)
    cluster_queues: tuple[int, int] = (2, 4)
    nominal: tuple[int, int] = (0, 8)
    admitted: tuple[int, int] = (0, 6)
    pending: tuple[int, int] = (1, 5)
    cpus: tuple[int, int] = (1, 5)
    priorities: tuple[int, ...] = (0, 1, 2, 3)
    creation_seconds: int = 3
    # "quota" (cohorts and quotas only), "fairsharing" or "tas" (module docstring)
    kind: str = "quota"


SHAPES = {
    "default": Shape(),
    # Queues filled first, then more pending work at higher priorities: mostly preemptions.
    "contended": Shape(
        nominal=(2, 8), admitted=(5, 10), pending=(2, 6), priorities=(0, 1, 2, 3, 4)
    ),
    # One cohort under fair sharing, queues filled past their quota, more pending work.
    "fairsharing": Shape(
        kind="fairsharing",
        cluster_queues=(2, 4),
        nominal=(2, 8),
        admitted=(4, 10),
        pending=(2, 6),
        priorities=tuple(range(8)),
    ),
    # TAS flavors over nodes of a block/rack/hostname topology, podSets of several pods.
    "tas": Shape(
        kind="tas",
        cluster_queues=(1, 3),
        nominal=(2, 14),
        admitted=(1, 5),
        pending=(1, 4),
        cpus=(1, 2),
    ),
}
# Fair-sharing weights: 97, 131, 173 and 239 hundredths are primes, so two borrowing queues
# have equal weighted shares (borrowed / weight) only when one borrows 97 cpu or more; None is
# no `fairSharing` (weight 1 = 100/100, which no borrowing under 97 ties either).
FAIR_WEIGHTS: tuple[str | None, ...] = ("0.97", "1.31", "1.73", "2.39", None)
FAIR_STRATEGIES = (
    ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
    ["LessThanOrEqualToFinalShare"],
    ["LessThanInitialShare"],
)


@dataclass
class _Queue:
    name: str
    flavors: list[str]
    nominal: dict[str, int]
    borrowing: dict[str, int | None]
    lending: dict[str, int | None]
    cohort: str | None
    used: dict[str, int]
    weight: str | None = None  # fair sharing's weight (None: no fairSharing field)


def _pick(rng: random.Random, options: tuple[str, ...]) -> str:
    return options[rng.randrange(len(options))]


def _cluster_queue(rng: random.Random, queue: _Queue) -> Obj:
    flavors = []
    for flavor in queue.flavors:
        resource: Obj = {"name": "cpu", "nominalQuota": str(queue.nominal[flavor])}
        if queue.borrowing[flavor] is not None:
            resource["borrowingLimit"] = str(queue.borrowing[flavor])
        if queue.lending[flavor] is not None:
            resource["lendingLimit"] = str(queue.lending[flavor])
        flavors.append({"name": flavor, "resources": [resource]})
    preemption: Obj = {
        "withinClusterQueue": _pick(rng, ("Never", "LowerPriority", "LowerOrNewerEqualPriority")),
        "reclaimWithinCohort": _pick(rng, ("Never", "LowerPriority", "Any")),
    }
    if preemption["reclaimWithinCohort"] != "Never" and rng.random() < 0.25:
        preemption["borrowWithinCohort"] = {
            "policy": "LowerPriority",
            "maxPriorityThreshold": rng.choice((0, 1, 2)),
        }
    spec: Obj = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
        "preemption": preemption,
    }
    if queue.cohort is not None:
        spec["cohortName"] = queue.cohort
    if len(queue.flavors) > 1 and rng.random() < 0.5:
        spec["flavorFungibility"] = {
            "whenCanBorrow": _pick(rng, ("MayStopSearch", "TryNextFlavor")),
            "whenCanPreempt": _pick(rng, ("TryNextFlavor", "MayStopSearch")),
        }
    if queue.weight is not None:
        spec["fairSharing"] = {"weight": queue.weight}
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": queue.name},
        "spec": spec,
    }


def _workload(name: str, queue: str, cpus: int, priority: int, created: int) -> Obj:
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "default",
            "creationTimestamp": BASE.format(created),
        },
        "spec": {
            "queueName": queue,
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "c", "resources": {"requests": {"cpu": str(cpus)}}}
                            ],
                        }
                    },
                }
            ],
        },
    }


def _capacity(queues: list[_Queue], queue: _Queue, flavor: str) -> int:
    """What `queue` can still take of `flavor`: its own unused quota, then what it may borrow
    of the cohort's unused lendable quota (within its borrowing limit)."""
    own_free = max(0, queue.nominal[flavor] - queue.used[flavor])
    if queue.cohort is None:
        return own_free
    members = [q for q in queues if q.cohort == queue.cohort and flavor in q.flavors]
    lendable = 0
    for member in members:
        if member is queue:
            continue
        lend = member.lending[flavor]
        share = member.nominal[flavor] if lend is None else min(lend, member.nominal[flavor])
        # what the member uses beyond what it keeps for itself comes out of its lent share
        kept = member.nominal[flavor] - share
        lendable += max(0, share - max(0, member.used[flavor] - kept))
    # borrowers' usage beyond their own nominal takes from the same pool
    borrowed = sum(max(0, m.used[flavor] - m.nominal[flavor]) for m in members if m is not queue)
    pool = max(0, lendable - borrowed)
    limit = queue.borrowing[flavor]
    already = max(0, queue.used[flavor] - queue.nominal[flavor])
    may_borrow = pool if limit is None else max(0, min(pool, limit - already))
    # and never more than the cohort has left: another queue's borrowing takes from the same
    # nominal quota this one is owed (an over-committed start is no state Kueue reaches)
    cohort_free = sum(m.nominal[flavor] - m.used[flavor] for m in members)  # `queue` is one
    return max(0, min(own_free + may_borrow, cohort_free))


def scenario(seed: int, index: int, shape: Shape | None = None) -> list[Obj]:
    """The documents of scenario `index` of `seed`."""
    shape = shape or Shape()
    rng = random.Random(f"{seed}-{index}")
    if shape.kind == "tas":
        return _tas_scenario(rng, shape)
    fair = shape.kind == "fairsharing"
    docs: list[Obj] = []
    if fair:
        docs.append(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                "kind": "Configuration",
                "fairSharing": {"preemptionStrategies": list(rng.choice(FAIR_STRATEGIES))},
            }
        )
    flavor_names = [f"f{i}" for i in range(rng.randint(*shape.flavors))]
    docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    for flavor_name in flavor_names:
        docs.append(
            {
                "apiVersion": KUEUE,
                "kind": "ResourceFlavor",
                "metadata": {"name": flavor_name},
                "spec": {},
            }
        )
    queues: list[_Queue] = []
    for number in range(rng.randint(*shape.cluster_queues)):
        own = rng.sample(flavor_names, rng.randint(1, len(flavor_names)))
        # under fair sharing every queue is in the cohort: Kueue v0.17.0 crashes on fair-sharing
        # preemption in a ClusterQueue without one (agreement.md, fairsharing-301)
        cohort = "cohort" if rng.random() < 0.85 or fair else None
        nominal = {f: rng.randint(*shape.nominal) for f in own}
        queues.append(
            _Queue(
                name=f"cq{number}",
                flavors=own,
                nominal=nominal,
                borrowing={
                    f: (rng.randint(0, 6) if cohort and rng.random() < 0.3 else None) for f in own
                },
                lending={
                    f: (rng.randint(0, nominal[f]) if cohort and rng.random() < 0.2 else None)
                    for f in own
                },
                cohort=cohort,
                used=dict.fromkeys(own, 0),
            )
        )
    if fair:
        weights = rng.sample(FAIR_WEIGHTS, len(queues))
        if rng.random() < 0.15:
            weights[rng.randrange(len(weights))] = "0"  # one zero weight at most: no tie
        for queue, weight in zip(queues, weights, strict=True):
            queue.weight = weight
    for queue in queues:
        docs.append(_cluster_queue(rng, queue))
    for queue in queues:
        docs.append(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": queue.name, "namespace": "default"},
                "spec": {"clusterQueue": queue.name},
            }
        )
    # Admitted workloads: each placed on the first of its queue's flavors with room.
    admitted_keys: set[tuple[int, int]] = set()
    for number in range(rng.randint(*shape.admitted)):
        queue = rng.choice(queues)
        cpus = rng.randint(*shape.cpus)
        flavor = next((f for f in queue.flavors if _capacity(queues, queue, f) >= cpus), None)
        if flavor is None:
            continue
        priority = rng.choice(shape.priorities)
        admitted_at = 1 + number  # distinct admission times: no tie in the candidates' order
        if (priority, admitted_at) in admitted_keys:
            continue
        if fair and priority in {p for p, _ in admitted_keys}:
            continue  # distinct priorities: no tie between two victims evicted in one second
        admitted_keys.add((priority, admitted_at))
        queue.used[flavor] += cpus
        workload = _workload(f"adm{number}", queue.name, cpus, priority, 0)
        when = BASE.format(admitted_at)
        workload["status"] = {
            "admission": {
                "clusterQueue": queue.name,
                "podSetAssignments": [
                    {
                        "name": "main",
                        "flavors": {"cpu": flavor},
                        "resourceUsage": {"cpu": str(cpus)},
                        "count": 1,
                    }
                ],
            },
            "conditions": _admitted_conditions(queue.name, when),
        }
        docs.append(workload)
    # Pending workloads: a unique (priority, creation second) each.
    taken: set[tuple[int, int]] = set()
    for number in range(rng.randint(*shape.pending)):
        queue = rng.choice(queues)
        key = _unique_pending_key(rng, shape, taken)
        if key is None:
            continue
        priority, created = key
        docs.append(
            _workload(f"wl{number}", queue.name, rng.randint(*shape.cpus), priority, created)
        )
    return docs


BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"
HOST = "kubernetes.io/hostname"
TAS_LEVELS = (BLOCK, RACK, HOST)


@dataclass
class _Node:
    name: str
    pool: str
    block: str
    rack: str
    cpus: int
    free: int

    def domain(self, level: int) -> tuple[str, ...]:
        """The node's domain at TAS_LEVELS[level] (its values down to that level)."""
        return (self.block, self.rack, self.name)[: level + 1]


def _node(node: _Node) -> Obj:
    resources = {"cpu": str(node.cpus), "memory": "64Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": {"pool": node.pool, BLOCK: node.block, RACK: node.rack, HOST: node.name},
        },
        "status": {
            "allocatable": resources,
            "capacity": dict(resources),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastHeartbeatTime": BASE.format(0),
                    "lastTransitionTime": BASE.format(0),
                }
            ],
        },
    }


def _topology_request(rng: random.Random) -> Obj | None:
    """A podSet's topologyRequest: required or preferred at a level, unconstrained, or none
    (in a ClusterQueue whose flavors are all TAS flavors, none means unconstrained)."""
    draw = rng.random()
    if draw < 0.45:
        return {"required": rng.choice(TAS_LEVELS)}
    if draw < 0.75:
        return {"preferred": rng.choice(TAS_LEVELS)}
    if draw < 0.9:
        return {"unconstrained": True}
    return None


def _place(nodes: list[_Node], count: int, cpus: int, request: Obj | None) -> dict[str, int]:
    """Pods per node for an admitted podSet: within the first domain (by name) of the
    required level that holds them all, else anywhere, filling nodes in name order. Any
    placement that fits the nodes is a state Kueue accepts; it need not be Kueue's choice."""
    level = TAS_LEVELS.index(request["required"]) if request and "required" in request else -1
    domains: dict[tuple[str, ...], list[_Node]] = {}
    for node in sorted(nodes, key=lambda n: n.domain(2)):
        domains.setdefault(node.domain(level) if level >= 0 else (), []).append(node)
    for members in domains.values():
        if sum(n.free // cpus for n in members) < count:
            continue
        placed: dict[str, int] = {}
        left = count
        for node in members:
            pods = min(left, node.free // cpus)
            if pods:
                placed[node.name] = pods
                left -= pods
        return placed
    return {}


def _tas_workload(
    name: str, queue: str, count: int, cpus: int, request: Obj | None, priority: int, created: int
) -> Obj:
    workload = _workload(name, queue, cpus, priority, created)
    [pod_set] = workload["spec"]["podSets"]
    pod_set["count"] = count
    if request is not None:
        pod_set["topologyRequest"] = request
    return workload


def _tas_scenario(rng: random.Random, shape: Shape) -> list[Obj]:
    """A scenario of the `tas` shape: one Topology (block, rack, hostname); one or two TAS
    flavors, each over its own pool of nodes (one or two blocks of one to three racks of one
    or two nodes, 1-4 cpu each); one to three ClusterQueues (mostly in one cohort) with cpu
    quotas of those flavors; admitted Workloads placed on the nodes (topologyAssignment at the
    hostname level, as Kueue writes it when the lowest level is the hostname) and pending ones,
    each one podSet of one to four pods with a topology request."""
    docs: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
        {
            "apiVersion": KUEUE,
            "kind": "Topology",
            "metadata": {"name": "default"},
            "spec": {"levels": [{"nodeLabel": level} for level in TAS_LEVELS]},
        },
    ]
    pools = [f"f{i}" for i in range(rng.randint(*shape.flavors))]
    nodes: dict[str, list[_Node]] = {}
    for pool in pools:
        docs.append(
            {
                "apiVersion": KUEUE,
                "kind": "ResourceFlavor",
                "metadata": {"name": pool},
                "spec": {"nodeLabels": {"pool": pool}, "topologyName": "default"},
            }
        )
        nodes[pool] = []
        for block in range(rng.randint(1, 2)):
            for rack in range(rng.randint(1, 3)):
                for host in range(rng.randint(1, 2)):
                    cpus = rng.choice((1, 2, 2, 3, 4))
                    name = f"{pool}-b{block}-r{rack}-h{host}"
                    nodes[pool].append(_Node(name, pool, f"b{block}", f"r{rack}", cpus, cpus))
    queues: list[_Queue] = []
    for number in range(rng.randint(*shape.cluster_queues)):
        own = rng.sample(pools, rng.randint(1, len(pools)))
        cohort = "cohort" if rng.random() < 0.7 else None
        nominal = {f: rng.randint(*shape.nominal) for f in own}
        queues.append(
            _Queue(
                name=f"cq{number}",
                flavors=own,
                nominal=nominal,
                borrowing={
                    f: (rng.randint(0, 6) if cohort and rng.random() < 0.3 else None) for f in own
                },
                lending={f: None for f in own},
                cohort=cohort,
                used=dict.fromkeys(own, 0),
            )
        )
    for queue in queues:
        docs.append(_cluster_queue(rng, queue))
    for queue in queues:
        docs.append(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": queue.name, "namespace": "default"},
                "spec": {"clusterQueue": queue.name},
            }
        )
    for pool in pools:
        docs.extend(_node(node) for node in nodes[pool])
    # Admitted workloads: on the first of the queue's flavors with quota and nodes for them.
    for number in range(rng.randint(*shape.admitted)):
        queue = rng.choice(queues)
        count, cpus = _pod_count(rng), rng.randint(*shape.cpus)
        request = _topology_request(rng)
        priority = rng.choice(shape.priorities)
        admitted_at = 1 + number  # distinct admission times: no tie in the candidates' order
        for flavor in queue.flavors:
            if _capacity(queues, queue, flavor) < count * cpus:
                continue
            placed = _place(nodes[flavor], count, cpus, request)
            if placed:
                break
        else:
            continue
        for node in nodes[flavor]:
            node.free -= placed.get(node.name, 0) * cpus
        queue.used[flavor] += count * cpus
        workload = _tas_workload(f"adm{number}", queue.name, count, cpus, request, priority, 0)
        when = BASE.format(admitted_at)
        slices = [
            {
                "domainCount": 1,
                "valuesPerLevel": [{"universal": host}],
                "podCounts": {"universal": pods},
            }
            for host, pods in sorted(placed.items())
        ]
        workload["status"] = {
            "admission": {
                "clusterQueue": queue.name,
                "podSetAssignments": [
                    {
                        "name": "main",
                        "flavors": {"cpu": flavor},
                        "resourceUsage": {"cpu": str(count * cpus)},
                        "count": count,
                        "topologyAssignment": {"levels": [HOST], "slices": slices},
                    }
                ],
            },
            "conditions": _admitted_conditions(queue.name, when),
        }
        docs.append(workload)
    # Pending workloads: a unique (priority, creation second) each.
    taken: set[tuple[int, int]] = set()
    for number in range(rng.randint(*shape.pending)):
        queue = rng.choice(queues)
        key = _unique_pending_key(rng, shape, taken)
        if key is None:
            continue
        priority, created = key
        count, cpus = _pod_count(rng), rng.randint(*shape.cpus)
        request = _topology_request(rng)
        docs.append(
            _tas_workload(f"wl{number}", queue.name, count, cpus, request, priority, created)
        )
    return docs


def _pod_count(rng: random.Random) -> int:
    return rng.randint(2, 4) if rng.random() < 0.8 else 1


def _unique_pending_key(
    rng: random.Random, shape: Shape, taken: set[tuple[int, int]]
) -> tuple[int, int] | None:
    """A (priority, creation second) no other pending Workload has (Kueue's heap would break
    that tie at random), added to `taken`; None after 20 draws that all collided."""
    for _ in range(20):
        key = (rng.choice(shape.priorities), 10 + rng.randrange(shape.creation_seconds))
        if key not in taken:
            taken.add(key)
            return key
    return None


def _admitted_conditions(queue: str, when: str) -> list[Obj]:
    return [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": f"Quota reserved in ClusterQueue {queue}",
            "lastTransitionTime": when,
        },
        {
            "type": "Admitted",
            "status": "True",
            "reason": "Admitted",
            "message": "The workload is admitted",
            "lastTransitionTime": when,
        },
    ]


def write(seed: int, count: int, out: Path, start: int = 0, shape: str = "default") -> list[Path]:
    """Write scenarios start..start+count-1 of `seed` into `out`; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    prefix = "generated" if shape == "default" else f"generated-{shape}"
    paths = []
    for index in range(start, start + count):
        path = out / f"{prefix}-{seed}-{index:04d}.yaml"
        path.write_text(yaml.safe_dump_all(scenario(seed, index, SHAPES[shape]), sort_keys=False))
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="first index (default 0)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--shape", choices=sorted(SHAPES), default="default", help="the ranges drawn from"
    )
    args = parser.parse_args(argv)
    if args.count < 1 or args.start < 0:
        print("--count must be at least 1 and --start at least 0", file=sys.stderr)
        return 2
    paths = write(args.seed, args.count, args.out, args.start, args.shape)
    print(f"wrote {len(paths)} scenarios to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
