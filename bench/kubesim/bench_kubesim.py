"""kubesim throughput with kubernetes-asyncio as the client (a benchmark, not a test).

    .venv/bin/python -m bench.kubesim.bench_kubesim [--creates 4000] [--events 5000]

The API server runs in a child process (its own core, as a real apiserver would); the clients
run here. Figures:
  * creates/s: ConfigMaps through CoreV1Api and custom resources through CustomObjectsApi,
    with --concurrency requests in flight;
  * watch events/s delivered: --watchers concurrent watches of one resource while the server
    process commits --events changes; every watcher must see every event, and the rate is
    watchers x events / (time from the first write to the last event seen by all).
Prints a JSON summary, so RESULTS.md can be refreshed from its output.
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
        ClusterSpec(name="bench", crds=[CRD], kubeconfig_scheme="http", watch_history=200_000)
    )
    pipe.send({"url": cluster.url, "token": cluster.token})
    loop = asyncio.get_running_loop()
    try:
        while True:
            command = await loop.run_in_executor(None, pipe.recv)
            if command["op"] == "stop":
                break
            if command["op"] == "produce":
                started = time.perf_counter()
                await _produce(cluster.api, command["count"], command["prefix"])
                pipe.send({"seconds": time.perf_counter() - started})
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


# ---- the client side --------------------------------------------------------------------------


TUNED = False


def _client(url: str, token: str, connections: int) -> client.ApiClient:
    configuration = client.Configuration(host=url)
    configuration.api_key = {"BearerToken": token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    configuration.connection_pool_maxsize = connections
    api = client.ApiClient(configuration)
    if TUNED:
        # kubernetes-asyncio opens its aiohttp session with trust_env=True, which costs two
        # thread-pool hops per request (netrc and proxy lookups from the environment).
        api.rest_client.pool_manager._trust_env = False
    return api


async def _run_in_flight(count: int, concurrency: int, make: Any) -> float:
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < count:
            index = next_index
            next_index += 1
            await make(index)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


async def bench_creates(url: str, token: str, count: int, concurrency: int) -> dict[str, float]:
    async with _client(url, token, concurrency) as api:
        core = client.CoreV1Api(api)
        custom = client.CustomObjectsApi(api)
        await core.create_namespaced_config_map("default", {"metadata": {"name": "warm"}})

        async def config_map(index: int) -> None:
            await core.create_namespaced_config_map(
                "default", {"metadata": {"name": f"cm-{index}"}, "data": {"index": str(index)}}
            )

        async def custom_object(index: int) -> None:
            await custom.create_namespaced_custom_object(
                GROUP,
                VERSION,
                "default",
                PLURAL,
                {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": "Widget",
                    "metadata": {"name": f"created-{index}"},
                    "spec": {"size": index},
                },
            )

        typed = await _run_in_flight(count, concurrency, config_map)
        untyped = await _run_in_flight(count, concurrency, custom_object)
    return {
        "configMapCreatesPerSecond": round(count / typed),
        "customObjectCreatesPerSecond": round(count / untyped),
    }


async def bench_watch(
    url: str, token: str, pipe: Connection, watchers: int, events: int
) -> dict[str, float]:
    async with _client(url, token, watchers + 2) as api:
        custom = client.CustomObjectsApi(api)
        listed = await custom.list_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, limit=1
        )
        start_rv = listed["metadata"]["resourceVersion"]
        ready = asyncio.Event()
        connected = 0
        finished_at: list[float] = []

        async def watcher() -> int:
            nonlocal connected
            seen = 0
            stream = watch.Watch()
            try:
                async for event in stream.stream(
                    custom.list_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    "default",
                    PLURAL,
                    resource_version=start_rv,
                    label_selector="bench=watch",
                    allow_watch_bookmarks=True,
                    timeout_seconds=600,
                ):
                    if event["type"] == "BOOKMARK":
                        continue
                    if seen == 0:
                        connected += 1
                    seen += 1
                    if seen == events:
                        finished_at.append(time.perf_counter())
                        break
            finally:
                await stream.close()
            return seen

        tasks = [asyncio.create_task(watcher()) for _ in range(watchers)]
        await asyncio.sleep(1.0)  # let every watch connect before the first write
        ready.set()
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        pipe.send({"op": "produce", "count": events, "prefix": "watched"})
        produced = await loop.run_in_executor(None, pipe.recv)
        counts = await asyncio.gather(*tasks)
        elapsed = max(finished_at) - started
    assert all(count == events for count in counts), counts
    return {
        "watchers": watchers,
        "eventsPerWatcher": events,
        "serverCommitSeconds": round(produced["seconds"], 3),
        "deliverySeconds": round(elapsed, 3),
        "watchEventsDeliveredPerSecond": round(watchers * events / elapsed),
    }


async def main_async(args: argparse.Namespace, pipe: Connection) -> dict[str, Any]:
    info = pipe.recv()
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": multiprocessing.cpu_count(),
        "creates": args.creates,
        "concurrency": args.concurrency,
        "tunedClient": TUNED,
    }
    try:
        import orjson  # noqa: F401

        results["json"] = "orjson"
    except ImportError:
        results["json"] = "stdlib json"
    results.update(await bench_creates(info["url"], info["token"], args.creates, args.concurrency))
    results.update(await bench_watch(info["url"], info["token"], pipe, args.watchers, args.events))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--creates", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument(
        "--tuned-client",
        action="store_true",
        help="Open kubernetes-asyncio's aiohttp session without trust_env (no per-request "
        "netrc/proxy lookups in threads).",
    )
    parser.add_argument("--profile-server", default=None, help="Write the server's cProfile here.")
    args = parser.parse_args()
    global TUNED
    TUNED = args.tuned_client
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    server = context.Process(target=_serve, args=(child, args.profile_server), daemon=True)
    server.start()
    try:
        results = asyncio.run(main_async(args, parent))
    finally:
        parent.send({"op": "stop"})
        server.join(10)
        if server.is_alive():
            server.terminate()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
