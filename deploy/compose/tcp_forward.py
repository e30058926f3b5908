"""Forward TCP connections from a listening address to a target, byte for byte, until stopped.

kubesim listens on 127.0.0.1 only; in docker-compose.yaml this runs in the worker's network
namespace and publishes its API to the other containers:
    python tcp_forward.py --listen 0.0.0.0:16443 --target 127.0.0.1:6443
Standard library only. Each connection is two copy loops; either side closing closes both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected HOST:PORT")
    return host, int(port)


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()


async def _serve(listen: tuple[str, int], target: tuple[str, int]) -> None:
    connections: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*target)
        except OSError as error:
            print(f"tcp_forward: cannot reach {target[0]}:{target[1]}: {error}", file=sys.stderr)
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        try:
            await asyncio.gather(_copy(reader, upstream_writer), _copy(upstream_reader, writer))
        finally:
            connections.discard(task)

    server = await asyncio.start_server(handle, *listen)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    bound = server.sockets[0].getsockname()
    print(f"tcp_forward: {bound[0]}:{bound[1]} -> {target[0]}:{target[1]}", flush=True)
    async with server:
        await stop.wait()
    for task in list(connections):
        task.cancel()
    await asyncio.gather(*connections, return_exceptions=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=_address, required=True, help="HOST:PORT to accept on")
    parser.add_argument("--target", type=_address, required=True, help="HOST:PORT to connect to")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args.listen, args.target))
    except OSError as error:
        print(
            f"tcp_forward: cannot listen on {args.listen[0]}:{args.listen[1]}: {error}",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
