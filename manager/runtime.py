"""The manager's running parts, built from settings: database, cipher, metrics, the election
among replicas, and the dispatcher it starts in the leader."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from manager.db.credentials import KubeconfigCipher, TokenHasher
from manager.db.fence import Fence, deciding
from manager.db.schema import require_migrated
from manager.db.session import SessionFactory, make_engine, make_session_factory, redact
from manager.dispatch.dispatcher import Dispatcher, DispatcherSettings
from manager.dispatch.timing import Clock, SystemClock
from manager.leadership import Leadership
from manager.metrics import FOLLOWER_ROLE, LEADER_ROLE, ManagerMetrics
from manager.settings import ManagerSettings


class Source(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class QueueGate(Protocol):
    """The manager cluster's queues, as far as a REST submission needs them."""

    def multikueue_queue(self, namespace: str, name: str) -> bool | None: ...

    def wake(self) -> None: ...


@dataclass
class ManagerRuntime:
    settings: ManagerSettings
    engine: AsyncEngine
    sessions: SessionFactory
    cipher: KubeconfigCipher
    tokens: TokenHasher
    metrics: ManagerMetrics
    clock: Clock
    # The epoch this replica leads under (manager.db.fence); None while it stands by.
    fence: Fence
    dispatcher: Dispatcher
    manager_kubeconfig: dict[str, Any] | None = None
    sources: list[Source] = field(default_factory=list)
    # The manager cluster's source, when there is one: its MultiKueue queues hold REST
    # submissions into them until Kueue there reserves their quota.
    manager_queues: QueueGate | None = None
    # The election among replicas (Postgres only; on SQLite this process is the only one).
    leadership: Leadership | None = None

    @classmethod
    async def open(
        cls,
        settings: ManagerSettings,
        clock: Clock | None = None,
        manager_kubeconfig: dict[str, Any] | None = None,
    ) -> ManagerRuntime:
        """Check the schema (SchemaNotMigrated otherwise), then lead or stand by.

        On Postgres the replica that wins the election (manager.leadership) dispatches; a sole
        replica has won before this returns. With `manager_kubeconfig`, the leader also reads
        the manager cluster's Jobs and MultiKueue objects.
        """
        cipher = KubeconfigCipher(settings.encryption_key)
        engine = make_engine(settings.database_url)
        try:
            await require_migrated(engine, redact(settings.database_url))
        except BaseException:
            await engine.dispose()
            raise
        sessions = make_session_factory(engine)
        clock = clock or SystemClock()
        fence = Fence(enabled=engine.dialect.name == "postgresql")
        metrics = ManagerMetrics()
        metrics.instrument(engine)
        runtime = cls(
            settings,
            engine,
            sessions,
            cipher,
            TokenHasher(settings.encryption_key),
            metrics,
            clock,
            fence,
            _new_dispatcher(settings, sessions, cipher, clock, metrics, fence),
            manager_kubeconfig,
        )
        metrics.leader.labels(replica=settings.replica_name).set(0)
        if not fence.enabled:
            await runtime._lead(0)
            return runtime
        runtime.leadership = Leadership(
            engine,
            fence,
            clock,
            identity=settings.replica_name,
            address=settings.advertise_url,
            on_elected=runtime._lead,
            on_deposed=runtime._stand_by,
            retry_seconds=settings.leader_retry_seconds,
            check_seconds=settings.leader_check_seconds,
        )
        try:
            await runtime.leadership.start()
        except BaseException:
            await runtime.close()
            raise
        return runtime

    @property
    def leading(self) -> bool:
        return self.leadership is None or self.leadership.leading

    def decide(self) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
        """A transaction that decides: refused unless this replica leads (manager.db.fence)."""
        return deciding(self.sessions, self.fence)

    async def _lead(self, epoch: int) -> None:
        """Elected: dispatch from the state in the database, and read the manager cluster."""
        if self.dispatcher.stopped:
            self.dispatcher = _new_dispatcher(
                self.settings, self.sessions, self.cipher, self.clock, self.metrics, self.fence
            )
        await self.dispatcher.start()
        self.metrics.leader.labels(replica=self.settings.replica_name).set(1)
        if self.leadership is not None:
            self.metrics.role = LEADER_ROLE
        self.metrics.elections.labels(replica=self.settings.replica_name).inc()
        if self.manager_kubeconfig is not None:
            # Imported here: the source builds on the runtime, not the other way round.
            from manager.sources.manager_cluster import ManagerClusterSource

            source = ManagerClusterSource(
                self,
                self.manager_kubeconfig,
                kueue_namespace=self.settings.kueue_namespace,
                interval=self.settings.manager_cluster_seconds,
            )
            await source.start()
            self.sources.append(source)
            self.manager_queues = source

    async def _stand_by(self) -> None:
        """Deposed (or closing): stop everything that decides; the next leader resumes it."""
        self.metrics.leader.labels(replica=self.settings.replica_name).set(0)
        if self.leadership is not None:
            self.metrics.role = FOLLOWER_ROLE
        self.manager_queues = None
        sources, self.sources = self.sources, []
        for source in sources:
            await source.stop()
        await self.dispatcher.stop()

    async def close(self) -> None:
        if self.leadership is not None:
            await self.leadership.stop()
        else:
            await self._stand_by()
        await self.engine.dispose()


def _new_dispatcher(
    settings: ManagerSettings,
    sessions: SessionFactory,
    cipher: KubeconfigCipher,
    clock: Clock,
    metrics: ManagerMetrics,
    fence: Fence,
) -> Dispatcher:
    return Dispatcher(
        sessions,
        cipher,
        DispatcherSettings(
            origin=settings.origin,
            dispatch=settings.dispatch_config(),
            worker_lost_timeout=timedelta(seconds=settings.worker_lost_timeout_seconds),
            capacity_freshness=timedelta(seconds=settings.capacity_freshness_seconds),
            preemption_round_timeout=timedelta(seconds=settings.preemption_round_seconds),
            resync_seconds=settings.resync_seconds,
            # 0: no periodic garbage collection (Kueue's gcInterval 0).
            gc_seconds=settings.gc_seconds or math.inf,
            lost_check_seconds=settings.lost_check_seconds,
            workers=settings.reconcile_workers,
            connection=settings.connection_settings(),
        ),
        clock,
        metrics,
        fence,
    )
