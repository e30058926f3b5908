"""A program run in a network namespace of its own, its API server still at 127.0.0.1:PORT.

For an operator that listens on a fixed port of every address: the MPI operator serves its
health check on `:8080`, hard-coded (cmd/mpi-operator/app/server.go, healthCheckPort), and
exits when the port is taken, so two of them (one per worker cluster) cannot share a host, nor
one share it with anything else on 8080. In a namespace of its own each has its own 8080.

The way out to the API server is a Unix socket, which a network namespace does not separate:
`relay` (on the host) takes connections on the socket to 127.0.0.1:PORT, and `run` (inside,
under `unshare --user --map-root-user --net`, which needs no privilege) brings the namespace's
loopback up, takes connections on its 127.0.0.1:PORT to the socket, and runs the program.
TLS passes through untouched, so the program's kubeconfig is the cluster's own.

    python -m mkq.realk8s.private_loopback relay SOCKET PORT
    python -m mkq.realk8s.private_loopback run SOCKET PORT -- PROGRAM ARGS...
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import signal
import socket
import struct
import sys
from collections.abc import Awaitable, Callable

_PR_SET_PDEATHSIG = 1
_SIOCSIFFLAGS = 0x8914
_IFF_UP, _IFF_LOOPBACK, _IFF_RUNNING = 0x1, 0x8, 0x40
_CHUNK = 1 << 16

Connect = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


def unshared(socket_path: str, port: int, argv: list[str]) -> list[str]:
    """The command that runs `argv` in a network namespace of its own, reaching the host's
    127.0.0.1:`port` through `socket_path` (where a `relay` listens)."""
    return [
        "unshare",
        "--user",
        "--map-root-user",
        "--net",
        "--",
        sys.executable,
        "-m",
        __name__,
        "run",
        socket_path,
        str(port),
        "--",
        *argv,
    ]


def relay_command(socket_path: str, port: int) -> list[str]:
    """The command of the host's side: `socket_path` to 127.0.0.1:`port`."""
    return [sys.executable, "-m", __name__, "relay", socket_path, str(port)]


def _die_with_parent() -> None:
    """SIGKILL when the parent dies: entering a user namespace clears what setpriv set."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _loopback_up() -> None:
    """A new network namespace's `lo` is down; raise it (what `ip link set lo up` does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = _IFF_UP | _IFF_LOOPBACK | _IFF_RUNNING
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags, b"\0" * 14))


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


def _forwarder(
    connect: Connect,
) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await connect()
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(_pump(reader, upstream_writer), _pump(upstream_reader, writer))
        finally:
            for end in (writer, upstream_writer):
                with contextlib.suppress(OSError):
                    end.close()

    return forward


async def relay(socket_path: str, port: int) -> None:
    """Forever: each connection on `socket_path` to 127.0.0.1:`port`."""
    server = await asyncio.start_unix_server(
        _forwarder(lambda: asyncio.open_connection("127.0.0.1", port)), path=socket_path
    )
    async with server:
        await server.serve_forever()


async def run(socket_path: str, port: int, argv: list[str]) -> int:
    """Inside the namespace: 127.0.0.1:`port` to `socket_path`, and `argv` run until it ends
    (a SIGTERM here is passed on to it)."""
    _die_with_parent()
    _loopback_up()
    server = await asyncio.start_server(
        _forwarder(lambda: asyncio.open_unix_connection(socket_path)), "127.0.0.1", port
    )
    async with server:
        process = await asyncio.create_subprocess_exec(*argv, preexec_fn=_die_with_parent)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, process.send_signal, signum)
        return await process.wait()


def main(args: list[str]) -> int:
    if args[:1] == ["relay"] and len(args) == 3:
        asyncio.run(relay(args[1], int(args[2])))
        return 0
    if args[:1] == ["run"] and len(args) > 4 and args[3] == "--":
        return asyncio.run(run(args[1], int(args[2]), args[4:]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
