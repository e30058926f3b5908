"""kubesim throughput with kubernetes-asyncio as the client (a benchmark, not a test).

    .venv/bin/python -m bench.kubesim.bench_kubesim [--creates 4000] [--events 5000]
        [--client-processes 2] [--tuned-client]

The API server runs in a child process (its own core, as a real apiserver would); the clients
run in --client-processes further processes. Figures:
  * creates/s: ConfigMaps through CoreV1Api (typed models) and custom resources through
    CustomObjectsApi (dicts), with --concurrency requests in flight in total;
  * watch events/s delivered: --watchers concurrent watches of one resource (split across the
    client processes) while the server process commits --events changes; every watcher must
    see every event, and the rate is watchers x events / (first write -> last event seen).
Prints a JSON summary (RESULTS.md records it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import platform
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, watch

CRD = Path(__file__).with_name("widgets-crd.yaml")
GROUP, VERSION, PLURAL = "test.kubesim.dev", "v1", "widgets"
CONTEXT = multiprocessing.get_context("spawn")


# ---- the server process -----------------------------------------------------------------------


def _serve(pipe: Connection, profile: str | None = None) -> None:
    if not profile:
        asyncio.run(_serve_async(pipe))
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        asyncio.run(_serve_async(pipe))
    finally:
        profiler.disable()
        profiler.dump_stats(profile)


async def _serve_async(pipe: Connection) -> None:
    from kubesim import ClusterSpec, start_cluster

    cluster = await start_cluster(
        ClusterSpec(name="bench", crds=[CRD], kubeconfig_scheme="http", watch_history=500_000)
    )
    pipe.send({"url": cluster.url, "token": cluster.token})
    loop = asyncio.get_running_loop()
    try:
        while True:
            command = await loop.run_in_executor(None, pipe.recv)
            if command["op"] == "stop":
                break
            if command["op"] == "cpu":
                pipe.send({"cpu": time.process_time()})
            if command["op"] == "produce":
                started = time.perf_counter()
                await _produce(cluster.api, command["count"], command["prefix"])
                pipe.send({"started": started, "seconds": time.perf_counter() - started})
    finally:
        await cluster.stop()


async def _produce(api: Any, count: int, prefix: str) -> None:
    """Commit `count` changes as fast as the loop allows, yielding so watches can drain."""
    widgets = api.type_for(f"{GROUP}/{PLURAL}")
    for index in range(count):
        api.create(
            widgets,
            "default",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "Widget",
                "metadata": {"name": f"{prefix}-{index}", "labels": {"bench": "watch"}},
                "spec": {"size": index},
            },
        )
        if index % 50 == 49:
            await asyncio.sleep(0)


# ---- client processes -------------------------------------------------------------------------


def _client(url: str, token: str, connections: int, tuned: bool) -> client.ApiClient:
    configuration = client.Configuration(host=url)
    configuration.api_key = {"BearerToken": token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    configuration.connection_pool_maxsize = connections
    api = client.ApiClient(configuration)
    if tuned:
        # kubernetes-asyncio opens its aiohttp session with trust_env=True, which costs two
        # thread-pool hops per request (netrc and proxy lookups from the environment).
        api.rest_client.pool_manager._trust_env = False
    return api


def _create_process(job: dict[str, Any], start: Any, results: Any) -> None:
    results.put(asyncio.run(_create_async(job, start)))


async def _create_async(job: dict[str, Any], start: Any) -> dict[str, Any]:
    async with _client(job["url"], job["token"], job["concurrency"], job["tuned"]) as api:
        core = client.CoreV1Api(api)
        custom = client.CustomObjectsApi(api)
        await core.list_namespaced_config_map("default", limit=1)  # connect, warm up

        async def one(index: int) -> None:
            name = f"{job['prefix']}-{index}"
            if job["kind"] == "configmaps":
                await core.create_namespaced_config_map(
                    "default", {"metadata": {"name": name}, "data": {"index": str(index)}}
                )
            else:
                await custom.create_namespaced_custom_object(
                    GROUP,
                    VERSION,
                    "default",
                    PLURAL,
                    {
                        "apiVersion": f"{GROUP}/{VERSION}",
                        "kind": "Widget",
                        "metadata": {"name": name},
                        "spec": {"size": index},
                    },
                )

        indexes = iter(range(job["count"]))

        async def worker() -> None:
            for index in indexes:
                await one(index)

        await asyncio.get_running_loop().run_in_executor(None, start.wait)
        started = time.perf_counter()
        cpu = time.process_time()
        await asyncio.gather(*(worker() for _ in range(job["concurrency"])))
        return {
            "started": started,
            "finished": time.perf_counter(),
            "count": job["count"],
            "cpu": time.process_time() - cpu,
        }


def _watch_process(job: dict[str, Any], ready: Any, results: Any) -> None:
    results.put(asyncio.run(_watch_async(job, ready)))


async def _watch_async(job: dict[str, Any], ready: Any) -> dict[str, Any]:
    async with _client(job["url"], job["token"], job["watchers"] + 1, job["tuned"]) as api:
        custom = client.CustomObjectsApi(api)
        finished: list[float] = []
        connected = asyncio.Event()
        bookmarks = [0]

        async def watcher() -> int:
            seen = 0
            stream = watch.Watch()
            try:
                async for event in stream.stream(
                    custom.list_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    "default",
                    PLURAL,
                    resource_version=job["rv"],
                    label_selector="bench=watch",
                    allow_watch_bookmarks=True,
                    timeout_seconds=600,
                ):
                    if event["type"] == "BOOKMARK":
                        bookmarks[0] += 1
                        if bookmarks[0] >= job["watchers"]:
                            connected.set()
                        continue
                    seen += 1
                    if seen == job["events"]:
                        finished.append(time.perf_counter())
                        break
            finally:
                await stream.close()
            return seen

        tasks = [asyncio.create_task(watcher()) for _ in range(job["watchers"])]
        async with asyncio.timeout(60):
            await connected.wait()  # every watch is open (it bookmarked)
        ready.put("connected")
        counts = await asyncio.gather(*tasks)
        return {"finished": max(finished), "counts": counts}


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _server_cpu(pipe: Connection) -> float:
    pipe.send({"op": "cpu"})
    return float(pipe.recv()["cpu"])


def bench_creates(
    info: dict[str, Any], args: argparse.Namespace, kind: str, pipe: Connection
) -> tuple[float, float, float]:
    """(creates per second, server CPU µs per create, client CPU µs per create)"""
    start = CONTEXT.Event()
    results = CONTEXT.Queue()
    processes = []
    for index, (count, concurrency) in enumerate(
        zip(
            _split(args.creates, args.client_processes),
            _split(args.concurrency, args.client_processes),
            strict=True,
        )
    ):
        job = {
            **info,
            "kind": kind,
            "count": count,
            "concurrency": concurrency,
            "prefix": f"{kind}-{index}",
            "tuned": args.tuned_client,
        }
        process = CONTEXT.Process(target=_create_process, args=(job, start, results))
        process.start()
        processes.append(process)
    time.sleep(2.0)  # let every client process start and warm up
    cpu_before = _server_cpu(pipe)
    start.set()
    outcomes = [results.get(timeout=600) for _ in processes]
    server_cpu = _server_cpu(pipe) - cpu_before
    for process in processes:
        process.join(30)
    elapsed = max(o["finished"] for o in outcomes) - min(o["started"] for o in outcomes)
    count = sum(o["count"] for o in outcomes)
    client_cpu = sum(o["cpu"] for o in outcomes)
    return count / elapsed, 1e6 * server_cpu / count, 1e6 * client_cpu / count


def bench_watch(info: dict[str, Any], args: argparse.Namespace, pipe: Connection) -> dict[str, Any]:
    ready = CONTEXT.Queue()
    results = CONTEXT.Queue()
    processes = []
    watchers = _split(args.watchers, args.client_processes)
    for count in watchers:
        if not count:
            continue
        job = {
            **info,
            "watchers": count,
            "events": args.events,
            "rv": "1",
            "tuned": args.tuned_client,
        }
        process = CONTEXT.Process(target=_watch_process, args=(job, ready, results))
        process.start()
        processes.append(process)
    for _ in processes:
        ready.get(timeout=120)
    pipe.send({"op": "produce", "count": args.events, "prefix": "watched"})
    produced = pipe.recv()
    outcomes = [results.get(timeout=600) for _ in processes]
    for process in processes:
        process.join(30)
    counts = [c for o in outcomes for c in o["counts"]]
    assert all(c == args.events for c in counts), counts
    elapsed = max(o["finished"] for o in outcomes) - produced["started"]
    return {
        "watchers": args.watchers,
        "eventsPerWatcher": args.events,
        "serverCommitSeconds": round(produced["seconds"], 3),
        "deliverySeconds": round(elapsed, 3),
        "watchEventsDeliveredPerSecond": round(args.watchers * args.events / elapsed),
    }


def _has_orjson() -> bool:
    try:
        import orjson  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--creates", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument(
        "--tuned-client",
        action="store_true",
        help="Open kubernetes-asyncio's aiohttp session without trust_env (no per-request "
        "netrc/proxy lookups in threads).",
    )
    parser.add_argument("--profile-server", default=None, help="Write the server's cProfile here.")
    args = parser.parse_args()
    parent, child = CONTEXT.Pipe()
    server = CONTEXT.Process(target=_serve, args=(child, args.profile_server), daemon=True)
    server.start()
    try:
        info = parent.recv()
        results: dict[str, Any] = {
            "python": platform.python_version(),
            "cpus": multiprocessing.cpu_count(),
            "loadAverageAtStart": round(__import__("os").getloadavg()[0], 2),
            "creates": args.creates,
            "concurrency": args.concurrency,
            "clientProcesses": args.client_processes,
            "tunedClient": args.tuned_client,
            "serverJson": "orjson" if _has_orjson() else "stdlib json",
        }
        for kind, label in (("configmaps", "configMap"), ("widgets", "customObject")):
            rate, server_us, client_us = bench_creates(info, args, kind, parent)
            results[f"{label}CreatesPerSecond"] = round(rate)
            results[f"{label}ServerCpuMicrosPerCreate"] = round(server_us)
            results[f"{label}ClientCpuMicrosPerCreate"] = round(client_us)
        results.update(bench_watch(info, args, parent))
    finally:
        parent.send({"op": "stop"})
        server.join(10)
        if server.is_alive():
            server.terminate()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
