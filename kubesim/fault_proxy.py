"""Loopback TCP proxies the tests and benchmarks put between the parts they run.

FaultProxy stands between a client and a cluster's API server, for the fault tests: it can drop
the connections (a partition: connections reset, new ones refused), stall them (a frozen
server: connections stay open and nothing comes back) and bring the link back. Balancer stands
in for a Service in front of several replicas."""

from __future__ import annotations

import asyncio
import contextlib

from kubesim.ports import free_port


class FaultProxy:
    def __init__(
        self, target_port: int, target_host: str = "127.0.0.1", *, port: int | None = None
    ) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.port = port or free_port()
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._flowing = asyncio.Event()
        self._flowing.set()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    async def cut(self) -> None:
        """Refuse new connections and drop the open ones, as a network partition does."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.close()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)
        self._flowing.set()

    def stall(self) -> None:
        """Nothing more goes through, either way; connections stay open, new ones are accepted
        and hang: what a client sees of an API server frozen with SIGSTOP."""
        self._flowing.clear()

    async def restore(self) -> None:
        """Bytes flow again (what a stall held goes on), and new connections are taken."""
        self._flowing.set()
        if self._server is None:
            await self.start()

    async def close(self) -> None:
        await self.cut()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._flowing.wait()
        try:
            up_reader, up_writer = await self._upstream()
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(src, dst))
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)

    async def _upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(self.target_host, self.target_port)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                await self._flowing.wait()
                dst.write(data)
                await dst.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._writers.discard(dst)
            with contextlib.suppress(Exception):
                dst.close()


class Balancer(FaultProxy):
    """A Service in front of several replicas: each new connection goes to the next target
    that accepts it (one that is down is passed over), as kube-proxy spreads connections
    over a Service's ready endpoints."""

    def __init__(self, targets: list[int], *, port: int | None = None) -> None:
        super().__init__(targets[0], port=port)
        self.targets = list(targets)
        self._next = 0

    async def _upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        failure: OSError | None = None
        for _ in range(len(self.targets)):
            target = self.targets[self._next % len(self.targets)]
            self._next += 1
            try:
                return await asyncio.open_connection(self.target_host, target)
            except OSError as error:
                failure = error
        assert failure is not None
        raise failure
