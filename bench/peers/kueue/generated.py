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
admission time (preemption's candidate order), and fair sharing (its tournament breaks equal
shares at random). Creation times take at most three distinct seconds, as the oracle creates
Workloads a second apart per distinct time.
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


SHAPES = {
    "default": Shape(),
    # Queues filled first, then more pending work at higher priorities: mostly preemptions.
    "contended": Shape(
        nominal=(2, 8), admitted=(5, 10), pending=(2, 6), priorities=(0, 1, 2, 3, 4)
    ),
}


@dataclass
class _Queue:
    name: str
    flavors: list[str]
    nominal: dict[str, int]
    borrowing: dict[str, int | None]
    lending: dict[str, int | None]
    cohort: str | None
    used: dict[str, int]


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
    flavor_names = [f"f{i}" for i in range(rng.randint(*shape.flavors))]
    docs: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}]
    for flavor in flavor_names:
        docs.append(
            {
                "apiVersion": KUEUE,
                "kind": "ResourceFlavor",
                "metadata": {"name": flavor},
                "spec": {},
            }
        )
    queues: list[_Queue] = []
    for number in range(rng.randint(*shape.cluster_queues)):
        own = rng.sample(flavor_names, rng.randint(1, len(flavor_names)))
        cohort = "cohort" if rng.random() < 0.85 else None
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
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": f"Quota reserved in ClusterQueue {queue.name}",
                    "lastTransitionTime": when,
                },
                {
                    "type": "Admitted",
                    "status": "True",
                    "reason": "Admitted",
                    "message": "The workload is admitted",
                    "lastTransitionTime": when,
                },
            ],
        }
        docs.append(workload)
    # Pending workloads: a unique (priority, creation second) each.
    taken: set[tuple[int, int]] = set()
    for number in range(rng.randint(*shape.pending)):
        queue = rng.choice(queues)
        for _ in range(20):
            key = (rng.choice(shape.priorities), 10 + rng.randrange(shape.creation_seconds))
            if key not in taken:
                break
        else:
            continue
        taken.add(key)
        priority, created = key
        docs.append(
            _workload(f"wl{number}", queue.name, rng.randint(*shape.cpus), priority, created)
        )
    return docs


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
