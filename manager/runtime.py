"""The manager's running parts, built from settings: database, cipher, metrics, dispatcher."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from manager.db.credentials import KubeconfigCipher, TokenHasher
from manager.db.schema import require_migrated
from manager.db.session import SessionFactory, make_engine, make_session_factory, redact
from manager.dispatch.dispatcher import Dispatcher, DispatcherSettings
from manager.dispatch.timing import Clock, SystemClock
from manager.metrics import ManagerMetrics
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
    dispatcher: Dispatcher
    sources: list[Source] = field(default_factory=list)
    # The manager cluster's source, when there is one: its MultiKueue queues hold REST
    # submissions into them until Kueue there reserves their quota.
    manager_queues: QueueGate | None = None

    @classmethod
    async def open(
        cls,
        settings: ManagerSettings,
        clock: Clock | None = None,
        manager_kubeconfig: dict[str, Any] | None = None,
    ) -> ManagerRuntime:
        """Check the schema (SchemaNotMigrated otherwise) and start dispatching.

        With `manager_kubeconfig`, the manager cluster's Jobs and MultiKueue objects are read too.
        """
        cipher = KubeconfigCipher(settings.encryption_key)
        engine = make_engine(settings.database_url)
        try:
            await require_migrated(engine, redact(settings.database_url))
        except BaseException:
            await engine.dispose()
            raise
        sessions = make_session_factory(engine)
        metrics = ManagerMetrics()
        clock = clock or SystemClock()
        dispatcher = Dispatcher(
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
        )
        runtime = cls(
            settings,
            engine,
            sessions,
            cipher,
            TokenHasher(settings.encryption_key),
            metrics,
            clock,
            dispatcher,
        )
        await dispatcher.start()
        if manager_kubeconfig is not None:
            # Imported here: the source builds on the runtime, not the other way round.
            from manager.sources.manager_cluster import ManagerClusterSource

            source = ManagerClusterSource(
                runtime,
                manager_kubeconfig,
                kueue_namespace=settings.kueue_namespace,
                interval=settings.manager_cluster_seconds,
            )
            await source.start()
            runtime.sources.append(source)
            runtime.manager_queues = source
        return runtime

    async def close(self) -> None:
        for source in self.sources:
            await source.stop()
        await self.dispatcher.stop()
        await self.engine.dispose()
