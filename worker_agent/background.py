"""A coroutine a component owns: started once, and cancelled and awaited when it stops.

Awaiting the cancelled task is what guarantees nothing it does outlives `stop()`; the
CancelledError it ends with is the expected outcome, not a failure to report.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancel_quietly(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


class BackgroundLoop:
    """Base of the components that run one loop of their own (`_run`) until stopped."""

    task_name = "background-loop"
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.task_name)

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_quietly(self._task)
            self._task = None

    async def _run(self) -> None:
        raise NotImplementedError
