"""kubesim.ports: the ports the tests' servers restart on are never ones the kernel gives to
outgoing connections."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from kubesim import ports


def test_a_free_port_is_below_the_ephemeral_range_and_can_be_listened_on() -> None:
    start = ports._ephemeral_start()
    for _ in range(20):
        port = ports.free_port()
        assert 10_000 <= port < start
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))
            server.listen()


def test_a_port_in_use_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports.free_port()))
        taken.listen()
        busy = int(taken.getsockname()[1])
        idle = ports.free_port()
        draws: Iterator[int] = iter([busy, busy, idle])
        monkeypatch.setattr(ports.random, "randrange", lambda low, high: next(draws))
        assert ports.free_port() == idle


def test_no_free_port_is_an_error_that_says_where_it_looked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports.free_port()))
        busy = int(taken.getsockname()[1])
        monkeypatch.setattr(ports.random, "randrange", lambda low, high: busy)
        with pytest.raises(RuntimeError, match=r"no free port on 127\.0\.0\.1 between 10000"):
            ports.free_port()


def test_the_range_falls_back_to_linuxs_default_when_proc_does_not_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE", ports.Path("/nonexistent/ip_local_port_range"))
    assert ports._ephemeral_start() == 32768
