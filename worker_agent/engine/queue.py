"""Per-ClusterQueue pending workloads: an active heap and an inadmissible set (spec §4).

Heap order is Kueue's: the sticky preemptor first (BestEffortFIFO), then effective priority
descending, queue-order time ascending, UID. Pushing and popping cost O(log n); workloads in
the inadmissible set wait for a freeing event. Equivalent workloads (same scheduling shape)
are moved to the inadmissible set together when one of them cannot fit, as Kueue's
equivalence hashing does.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

from worker_agent.engine.workload import WorkloadInfo

_Entry = tuple[tuple[object, ...], int, str]


class PendingQueue:
    __slots__ = (
        "_heap",
        "_seq",
        "active",
        "best_effort",
        "blocked_shapes",
        "by_shape",
        "inadmissible",
        "preemptor",
        "sticky",
        "usage_of",
    )

    def __init__(self, best_effort: bool) -> None:
        self.best_effort = best_effort
        self._heap: list[_Entry] = []
        self._seq = 0
        self.active: dict[str, tuple[WorkloadInfo, int]] = {}
        self.inadmissible: dict[str, WorkloadInfo] = {}
        self.by_shape: dict[int, set[str]] = {}
        self.blocked_shapes: dict[int, str] = {}
        self.sticky: str | None = None
        self.usage_of: Callable[[WorkloadInfo], float] | None = None

    def __len__(self) -> int:
        return len(self.active) + len(self.inadmissible)

    def __contains__(self, key: str) -> bool:
        return key in self.active or key in self.inadmissible

    def infos(self) -> Iterator[WorkloadInfo]:
        for info, _ in self.active.values():
            yield info
        yield from self.inadmissible.values()

    def push_active(self, info: WorkloadInfo, shape_id: int) -> None:
        key = info.key
        self.inadmissible.pop(key, None)
        self._seq += 1
        self.active[key] = (info, self._seq)
        heap = self._heap
        if len(heap) > 2 * len(self.active) + 64:
            self._compact()
        heapq.heappush(heap, (info.order_key, self._seq, key))
        self.by_shape.setdefault(shape_id, set()).add(key)

    def _compact(self) -> None:
        """Drop the heap's stale entries (removed, blocked or re-pushed workloads).

        Entries are deleted lazily, and every freeing event pushes each inadmissible workload
        again, so without this the heap grows by the backlog at every event and each pop
        wades through its head's old copies. Rebuilding from the live entries keeps the same
        order (the live entries are the same); amortised O(1) per push."""
        self._heap[:] = [(info.order_key, seq, key) for key, (info, seq) in self.active.items()]
        heapq.heapify(self._heap)

    def push(self, info: WorkloadInfo, shape_id: int) -> bool:
        """Add a new or updated workload; returns False when it went to the inadmissible set
        because it is backing off or an equivalent workload recently failed."""
        key = info.key
        if key in self.active:
            self.remove(key, shape_id)
        if info.spec.requeued_false:
            # Backing off (Requeued=False after an eviction): it waits for the owner to end
            # the backoff, as Kueue's PushOrUpdate keeps it inadmissible.
            self.inadmissible[key] = info
            return False
        if self.best_effort and shape_id in self.blocked_shapes:
            self.inadmissible[key] = info
            return False
        self.push_active(info, shape_id)
        return True

    def remove(self, key: str, shape_id: int) -> None:
        self.inadmissible.pop(key, None)
        if self.active.pop(key, None) is not None:
            keys = self.by_shape.get(shape_id)
            if keys is not None:
                keys.discard(key)
        if self.sticky == key:
            self.sticky = None

    def pop(self, shape_of: dict[str, int]) -> WorkloadInfo | None:
        if self.usage_of is not None:
            return self._pop_by_usage(shape_of)
        sticky = self.sticky
        if sticky is not None and sticky in self.active:
            info, _ = self.active.pop(sticky)
            self.by_shape.get(shape_of[sticky], set()).discard(sticky)
            return info
        heap = self._heap
        while heap:
            _, seq, key = heapq.heappop(heap)
            current = self.active.get(key)
            if current is None or current[1] != seq:
                continue
            del self.active[key]
            self.by_shape.get(shape_of[key], set()).discard(key)
            return current[0]
        return None

    def _pop_by_usage(self, shape_of: dict[str, int]) -> WorkloadInfo | None:
        """Admission fair sharing: LocalQueue usage changes with every admission, so the
        order is computed at pop time (Kueue rebuilds its heap when penalties are pending)."""
        if not self.active:
            return None
        key = min(self.active, key=lambda k: self._afs_key(self.active[k][0]))
        info, _ = self.active.pop(key)
        self.by_shape.get(shape_of[key], set()).discard(key)
        return info

    def _afs_key(self, info: WorkloadInfo) -> tuple[object, ...]:
        assert self.usage_of is not None
        return (self.usage_of(info), info.key != self.sticky, info.order_key)

    def set_preemptor(self, key: str) -> None:
        """The workload issued preemptions and waits for them: under BestEffortFIFO it stays
        at the head (sticky) until admitted or removed. Nothing else orders it first: Kueue
        v0.17 has no such rule (engine.cycle._entry_order)."""
        if self.best_effort:
            self.sticky = key

    def clear_preemptor(self, key: str) -> None:
        if self.sticky == key:
            self.sticky = None

    def make_inadmissible(self, info: WorkloadInfo) -> None:
        self.inadmissible[info.key] = info

    def block_shape(self, shape_id: int, reason: str) -> list[WorkloadInfo]:
        """Move every active workload of this shape to the inadmissible set."""
        if not self.best_effort:
            return []
        self.blocked_shapes[shape_id] = reason
        moved: list[WorkloadInfo] = []
        for key in self.by_shape.pop(shape_id, set()):
            entry = self.active.pop(key, None)
            if entry is not None:
                self.inadmissible[key] = entry[0]
                moved.append(entry[0])
        return moved

    def requeue_inadmissible(self, shape_of: dict[str, int], now: float) -> int:
        """A freeing event: everything inadmissible whose backoff is over goes back to the
        heap, and the equivalence blocks are forgotten."""
        self.blocked_shapes.clear()
        moved = 0
        for key, info in list(self.inadmissible.items()):
            if not backoff_expired(info, now):
                continue
            del self.inadmissible[key]
            self.push_active(info, shape_of[key])
            moved += 1
        return moved

    def heap_order(self) -> list[WorkloadInfo]:
        """All pending workloads in queue order (for positions and status)."""
        infos = list(self.infos())
        if self.usage_of is not None:
            infos.sort(key=self._afs_key)
            return infos
        sticky = self.sticky
        infos.sort(key=lambda i: (i.key != sticky, i.order_key))
        return infos


def backoff_expired(info: WorkloadInfo, now: float) -> bool:
    spec = info.spec
    if spec.requeued_false:
        return False
    return spec.requeue_at is None or now >= spec.requeue_at
