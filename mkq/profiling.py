"""An opt-in CPU profile of a whole mkq process, for benchmarks.

With MKQ_PROFILE_OUT set to a directory, `profiled(name)` writes `<name>-<pid>.pstats` there
when the block ends (a SIGTERM ends it too). The timer is the process's CPU time, not the wall
clock: on a machine where every process competes for the cores, wall time charges a function
for the moments the kernel ran someone else.
"""

from __future__ import annotations

import contextlib
import cProfile
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)


@contextlib.contextmanager
def profiled(name: str) -> Iterator[None]:
    out = os.environ.get("MKQ_PROFILE_OUT")
    if not out:
        yield
        return
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    # Servers re-raise the stop signal after a graceful shutdown; make it an exit so the
    # profile is written.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        profiler.dump_stats(directory / f"{name}-{os.getpid()}.pstats")
