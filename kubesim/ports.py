"""Free loopback TCP ports for the servers the demo, the benchmarks and the tests start."""

from __future__ import annotations

import random
import socket
from pathlib import Path

_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000


def _ephemeral_start() -> int:
    """The first port the kernel hands out to outgoing connections (Linux's default, 32768,
    where /proc does not say)."""
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, below the kernel's ephemeral range.

    A port from bind(0) is an ephemeral one: when the server on it is stopped and started again
    (a test restarting Postgres, a manager replica, a worker), an outgoing connection made
    meanwhile may be given that very port as its own, and the restart fails with "address in
    use". No outgoing connection is given a port below the range."""
    top = max(_ephemeral_start(), _LOWEST + 1_000)
    for _ in range(200):
        port = random.randrange(_LOWEST, top)
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port on {host} between {_LOWEST} and {top}")
