"""The dashboard (/ui) in headless Chromium (Debian's, driven by Playwright) during the demo's
run: it shows every worker cluster, queue and workload, follows the Jobs live to their end
without a reload, and draws its plots. Screenshots go to .test-artifacts/dashboard/ (not the
repository)."""

from __future__ import annotations

import asyncio
import io
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, async_playwright
from rich.console import Console

from mkq.demo.run import drive
from mkq.demo.system import WORKERS, DemoSystem, start_system
from mkq.demo.workload_mix import workload_mix

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / ".test-artifacts" / "dashboard"
CHROMIUM = "/usr/bin/chromium"
# As the machine's notes start it: no sandbox as root, no calls to Google's services.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
JOBS = 12


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    assert shutil.which(CHROMIUM), (
        f"{CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does it as root)"
    )
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def system() -> AsyncIterator[DemoSystem]:
    async with start_system() as started:
        yield started


async def signed_in(browser: Browser, system: DemoSystem) -> Page:
    page = await browser.new_page(viewport={"width": 1400, "height": 1000})
    await page.goto(f"{system.api_url}/ui")
    await page.fill("#token", "not-the-token")
    await page.click("button[type=submit]")
    assert "not the manager's API token" in await page.inner_text("body")
    await page.fill("#token", system.api_token)
    await page.click("button[type=submit]")
    await page.wait_for_selector("#status[data-state=live]")
    return page


async def workload_states(page: Page) -> dict[str, str]:
    rows = await page.eval_on_selector_all(
        "#workloads tbody tr",
        "rows => rows.map(r => [r.dataset.workload, r.querySelector('.state').textContent])",
    )
    return dict(rows)


async def test_the_dashboard_follows_the_demo_live(browser: Browser, system: DemoSystem) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = await signed_in(browser, system)
    for cluster in WORKERS:
        await page.wait_for_selector(f"article.card[data-cluster='{cluster}']")

    jobs = workload_mix(JOBS)
    keys = {f"{job.namespace}/{job.name}" for job in jobs}
    run = asyncio.create_task(drive(system, jobs, Console(file=io.StringIO()), 120.0))
    seen: dict[str, set[str]] = {}
    try:
        # Watched as the browser shows it, never reloaded: every workload appears, and each
        # one's state changes in place until it is Succeeded.
        for _ in range(600):
            states = await workload_states(page)
            for key, state in states.items():
                seen.setdefault(key, set()).add(state)
            if keys <= states.keys() and all(states[k] == "Succeeded" for k in keys):
                break
            if run.done() and run.exception() is not None:
                raise run.exception()  # type: ignore[misc]
            await asyncio.sleep(0.2)
        else:
            raise AssertionError(f"not every workload Succeeded on the page: {states}")
        verdict = await run
    finally:
        if not run.done():
            run.cancel()
    assert verdict.ok, verdict.failures
    await page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
    # Seen on their way (not only at the end): the page followed them live.
    assert any(len(states) > 1 for key, states in seen.items() if key in keys), seen
    assert int(await page.get_attribute("body", "data-snapshots") or 0) > 3

    # Each queue the jobs went to, with its workloads counted as finished.
    queues = await page.eval_on_selector_all(
        "#queues tbody tr", "rows => rows.map(r => [r.dataset.queue, r.cells[4].textContent])"
    )
    finished = dict(queues)
    async with system.api() as api:
        records = (await api.get("/workloads", params={"limit": 1000})).json()["items"]
    expected: dict[str, int] = {}
    for record in records:
        if f"{record['namespace']}/{record['name']}" in keys:
            queue = f"{record['namespace']}/{record['queue']}"
            expected[queue] = expected.get(queue, 0) + 1
    assert sum(expected.values()) == JOBS
    assert {q: int(finished.get(q, "0")) for q in expected} == expected

    # The counts, and the plots drawn from the history the page kept.
    total = await page.inner_text("#summary [data-state=total] b")
    assert int(total) >= JOBS
    assert await page.locator("#plot-states polyline[data-series=Succeeded]").count() == 1
    assert await page.locator("#plot-admission polyline").count() == 1
    for worker in WORKERS:
        assert await page.locator(f"#plot-usage polyline[data-series='{worker}']").count() == 1
    # Usage against quota per worker ClusterQueue and its cohort, from the agents' reports.
    assert await page.locator("article.card .bar").count() > 0
    cohorts = await page.eval_on_selector_all(
        "article.card tbody tr", "rows => rows.map(r => r.cells[1].textContent)"
    )
    assert cohorts and set(cohorts) == {"org"}  # deploy/examples' worker setups: cohort org

    # A workload's dispatch history, and the filter.
    target = sorted(keys)[0]
    await page.fill("#search", target.split("/")[1])
    assert set((await workload_states(page)).keys()) == {target}
    await page.click(f"#workloads tbody tr[data-workload='{target}']")
    await page.wait_for_selector("#detail:not([hidden]) #detail-events tbody tr")
    history = await page.inner_text("#detail-events")
    assert "Admitted" in history or "Dispatched" in history, history
    await page.screenshot(path=str(ARTIFACTS / "workload.png"), full_page=True)


async def test_the_dashboard_data_needs_a_signed_in_browser(system: DemoSystem) -> None:
    async with httpx.AsyncClient(base_url=system.api_url) as client:
        login = await client.get("/ui")
        assert login.status_code == 200 and 'name="token"' in login.text
        for path in ("/ui/snapshot", "/ui/events", "/ui/workloads/default/x"):
            refused = await client.get(path)
            assert refused.status_code == 401, path
        signed = await client.post("/ui/login", data={"token": system.api_token})
        assert signed.status_code == 303
        cookie = signed.cookies.get("mkq_ui")
        assert cookie and system.api_token not in cookie
        snapshot: dict[str, Any] = (await client.get("/ui/snapshot")).json()
        assert {c["name"] for c in snapshot["clusters"]} >= set(WORKERS)
        assert (await client.get("/api/v1/workloads")).status_code == 401  # the API keeps its token
