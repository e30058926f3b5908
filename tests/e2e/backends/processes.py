"""The mkq processes a test starts (managers, agents), each with its output in a log file."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mkq.realk8s.clusters import log_tail


@dataclass
class Process:
    """One mkq process of a test, its output in a log file."""

    label: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def signal(self, sig: signal.Signals) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, sig)

    async def stop(self, grace: float = 15.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGCONT)
        os.killpg(process.pid, signal.SIGTERM)
        try:
            await asyncio.to_thread(process.wait, grace)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            await asyncio.to_thread(process.wait)

    def failure(self) -> str | None:
        """What went wrong, if the process died."""
        if self.process is not None and self.process.poll() is not None:
            return f"{self.label} exited ({self.process.returncode}):\n{log_tail(self.log, 30)}"
        return None
