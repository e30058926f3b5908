"""Leader election on a coordination.k8s.io/v1 Lease, so two agent replicas never both admit.

As client-go does, expiry is judged by how long *we* have seen the same lease record unchanged
(our monotonic clock), never by comparing the holder's timestamps with ours, so clock skew
between replicas cannot make two leaders. Every write is a compare-and-swap on resourceVersion.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kueue_api.timestamps import micro_time
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import LEASES

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]


class LeaderElector:
    """Acquires and renews one Lease; `is_leader` says whether we hold it right now."""

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._monotonic = monotonic
        self._observed: tuple[str, str, str] | None = None
        self._observed_at = 0.0
        self.is_leader = False

    def _lease(self, previous: JsonObject | None) -> JsonObject:
        now = micro_time(datetime.now(UTC))
        spec = dict((previous or {}).get("spec") or {})
        transitions = int(spec.get("leaseTransitions") or 0)
        if spec.get("holderIdentity") != self.identity:
            spec["acquireTime"] = now
            if spec.get("holderIdentity"):
                transitions += 1
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=max(1, round(self.lease_duration)),
            renewTime=now,
            leaseTransitions=transitions,
        )
        metadata = dict((previous or {}).get("metadata") or {})
        metadata.update(name=self.name, namespace=self.namespace)
        return {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": metadata,
            "spec": spec,
        }

    def _held_by_other(self, lease: JsonObject) -> bool:
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        if not holder or holder == self.identity:
            return False
        record = (holder, str(spec.get("renewTime", "")), str(spec.get("leaseDurationSeconds")))
        now = self._monotonic()
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        return now - self._observed_at < duration

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the lease afterwards."""
        try:
            lease = await self._client.get(LEASES, self.name, self.namespace)
        except ApiError as error:
            if not error.not_found:
                raise
            try:
                await self._client.create(LEASES, self._lease(None))
            except ApiError as create_error:
                if create_error.conflict:  # someone else created it first
                    return False
                raise
            return True
        if self._held_by_other(lease):
            log.debug(
                "lease %s held by %s", self.name, (lease.get("spec") or {}).get("holderIdentity")
            )
            return False
        try:
            await self._client.replace(LEASES, self._lease(lease))
        except ApiError as error:
            if error.conflict:
                log.debug("lease %s: conflict taking it over", self.name)
                return False
            raise
        return True

    async def acquire(self) -> None:
        """Wait until we are the leader."""
        while True:
            try:
                if await self.try_acquire_or_renew():
                    self.is_leader = True
                    log.info("leader lease %s/%s acquired", self.namespace, self.name)
                    return
            except Exception as error:
                log.warning("leader election: %r", error)
            await asyncio.sleep(self.retry_period)

    async def keep(self) -> None:
        """Renew until a renewal has not succeeded for `renew_deadline`; then return."""
        last_renewed = self._monotonic()
        while True:
            await asyncio.sleep(self.retry_period)
            try:
                renewed = await self.try_acquire_or_renew()
            except Exception as error:
                log.warning("leader lease renewal failed: %r", error)
                renewed = False
            if renewed:
                last_renewed = self._monotonic()
            elif (
                self._monotonic() - last_renewed >= self.renew_deadline
                or await self._lost_to_other()
            ):
                self.is_leader = False
                log.warning("leader lease %s/%s lost", self.namespace, self.name)
                return

    async def _lost_to_other(self) -> bool:
        try:
            lease = await self._client.get(LEASES, self.name, self.namespace)
        except (ApiError, OSError):
            return False
        holder = (lease.get("spec") or {}).get("holderIdentity")
        return bool(holder) and holder != self.identity

    async def release(self) -> None:
        """Give the lease up on a clean shutdown so a successor need not wait for expiry."""
        if not self.is_leader:
            return
        self.is_leader = False
        try:
            lease = await self._client.get(LEASES, self.name, self.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            lease["spec"] = dict(spec, holderIdentity="", leaseDurationSeconds=1)
            await self._client.replace(LEASES, lease)
        except (ApiError, OSError) as error:
            log.debug("leader lease not released: %s", error)
