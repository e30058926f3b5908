"""The demo's run: submit the mix, watch it live, and judge the outcome."""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from mkq.demo.ledger import PodLedger
from mkq.demo.manifests import create
from mkq.demo.system import MANAGER, DemoSystem
from mkq.demo.workload_mix import DemoJob

FINAL = {"Succeeded", "Failed", "Cancelled"}


@dataclass
class Progress:
    """The manager's view of every workload, refreshed by polling its REST API."""

    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    decisions: deque[str] = field(default_factory=lambda: deque(maxlen=8))

    def update(self, items: list[dict[str, Any]]) -> None:
        for item in items:
            key = f"{item['namespace']}/{item['name']}"
            before = self.records.get(key)
            if before is None or (before["state"], before.get("cluster")) != (
                item["state"],
                item.get("cluster"),
            ):
                where = f" on {item['cluster']}" if item.get("cluster") else ""
                self.decisions.append(f"{key}: {item['state']}{where}")
            self.records[key] = item

    def finished(self, keys: list[str]) -> bool:
        return all(self.records.get(k, {}).get("state") in FINAL for k in keys)


async def submit(system: DemoSystem, jobs: list[DemoJob]) -> list[str]:
    """Send each Job its way in; returns the errors (empty when all were accepted)."""
    errors: list[str] = []
    async with system.api() as api:
        for job in jobs:
            if job.route == "manager-cluster":
                await create(system.clients[MANAGER], job.manifest)
                continue
            response = await api.post("/workloads", json=job.manifest)
            if response.status_code != 201:
                errors.append(f"{job.key}: REST answered {response.status_code}: {response.text}")
    return errors


async def poll(api: httpx.AsyncClient) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 500}
        if token:
            params["continue"] = token
        response = await api.get("/workloads", params=params)
        response.raise_for_status()
        page = response.json()
        items.extend(page["items"])
        token = page.get("continue")
        if not token:
            return items


def render(system: DemoSystem, jobs: list[DemoJob], progress: Progress, elapsed: float) -> Group:
    per_cluster: dict[str, Counter[str]] = {name: Counter() for name in system.workers}
    per_queue: dict[str, Counter[str]] = {}
    for job in jobs:
        record = progress.records.get(job.key)
        state = record["state"] if record else "Submitting"
        queue = f"{job.namespace}/user-queue"
        per_queue.setdefault(queue, Counter())[state] += 1
        if record and record.get("cluster") in per_cluster:
            per_cluster[record["cluster"]][state] += 1
    clusters = Table(title="worker clusters", expand=False)
    for column in ("cluster", "admitted", "running", "succeeded", "failed"):
        clusters.add_column(column, justify="right" if column != "cluster" else "left")
    for name, counts in per_cluster.items():
        clusters.add_row(
            name,
            str(counts["Admitted"]),
            str(counts["Running"]),
            str(counts["Succeeded"]),
            str(counts["Failed"]),
        )
    queues = Table(title="queues (manager view)", expand=False)
    for column in ("queue", "pending", "dispatched", "admitted/running", "finished"):
        queues.add_column(column, justify="right" if column != "queue" else "left")
    for queue, counts in sorted(per_queue.items()):
        queues.add_row(
            queue,
            str(counts["Pending"] + counts["Submitting"] + counts["Evicted"]),
            str(counts["Dispatched"]),
            str(counts["Admitted"] + counts["Running"]),
            str(sum(counts[s] for s in FINAL)),
        )
    recent = Text("recent decisions:\n" + "\n".join(f"  {d}" for d in progress.decisions))
    header = Text(f"mkq demo: {len(jobs)} jobs, {elapsed:.1f}s", style="bold")
    return Group(header, clusters, queues, recent)


def _seconds_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


@dataclass
class Verdict:
    failures: list[str]
    per_cluster: Counter[str]
    admission_seconds: list[float]

    @property
    def ok(self) -> bool:
        return not self.failures


def judge(jobs: list[DemoJob], progress: Progress, ledger: PodLedger) -> Verdict:
    """Every Job finished, succeeded, and ran in exactly one worker cluster."""
    failures: list[str] = []
    per_cluster: Counter[str] = Counter()
    waits: list[float] = []
    for job in jobs:
        record = progress.records.get(job.key)
        if record is None:
            failures.append(f"{job.key}: the manager has no record of it")
            continue
        if record["state"] != "Succeeded":
            failures.append(f"{job.key}: ended {record['state']} ({record.get('message') or ''})")
        # A preempted Job may have started elsewhere first (and had pods succeed there before
        # its eviction); it must complete once, in the cluster the manager names, with exactly
        # its completions.
        completions_seen = ledger.completed.get(job.key, set())
        completed_in = {seen.split("/", 1)[0] for seen in completions_seen}
        completions = job.manifest["spec"]["completions"]
        succeeded_pods = sum(len(ledger.succeeded_by_job[seen]) for seen in completions_seen)
        if len(completions_seen) > 1 and len(completed_in) == 1:
            failures.append(f"{job.key}: completed {len(completions_seen)} times in {completed_in}")
        elif len(completed_in) != 1:
            failures.append(f"{job.key}: completed in {sorted(completed_in) or 'no cluster'}")
        elif record.get("cluster") not in completed_in:
            failures.append(
                f"{job.key}: manager says {record.get('cluster')}, completed in {completed_in}"
            )
        elif succeeded_pods != completions:
            failures.append(f"{job.key}: {succeeded_pods} pods succeeded, {completions} wanted")
        per_cluster[record.get("cluster") or "-"] += 1
        wait = _seconds_between(record.get("createdAt"), record.get("admittedAt"))
        if wait is not None:
            waits.append(wait)
    return Verdict(failures, per_cluster, waits)


async def drive(
    system: DemoSystem, jobs: list[DemoJob], console: Console, time_limit: float
) -> Verdict:
    ledger = PodLedger()
    ledger.start({name: system.clients[name] for name in system.workers})
    progress = Progress()
    started = time.monotonic()
    try:
        errors = await submit(system, jobs)
        if errors:
            return Verdict(errors, Counter(), [])
        keys = [job.key for job in jobs]
        async with system.api() as api:
            with Live(console=console, refresh_per_second=4, transient=False) as live:
                while time.monotonic() - started < time_limit:
                    progress.update(await poll(api))
                    live.update(render(system, jobs, progress, time.monotonic() - started))
                    if progress.finished(keys):
                        break
                    await asyncio.sleep(0.5)
        # Let the ledger see the last pod transitions before judging.
        await asyncio.sleep(0.5)
    finally:
        await ledger.stop()
    verdict = judge(jobs, progress, ledger)
    if time.monotonic() - started >= time_limit:
        verdict.failures.append(f"not every workload finished within {time_limit:.0f}s")
    return verdict
