"""Real control planes for the tests (mkq/realk8s): started once per pytest session, per group.

A group is a set of cluster names started together (one etcd, one control plane per name).
`real_clusters(("fidelity",))` starts that group the first time a test asks for it and keeps it
for the rest of the session; every group is stopped when the session ends (and, since each
process is tied to this one, when pytest dies).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from mkq.realk8s.clusters import RealCluster, start_clusters, stop_clusters

_groups: dict[tuple[tuple[str, ...], bool], dict[str, RealCluster]] = {}
_directories: list[Path] = []


def real_clusters(names: tuple[str, ...], *, aggregation: bool = False) -> dict[str, RealCluster]:
    """The session's running clusters named `names`, started on first use; with
    `aggregation`, serving aggregated APIs (mkq.realk8s.clusters.start_clusters)."""
    key = (names, aggregation)
    if key not in _groups:
        directory = Path(tempfile.mkdtemp(prefix="mkq-realk8s-"))
        _directories.append(directory)
        _groups[key] = start_clusters(directory, names, tie_to_parent=True, aggregation=aggregation)
    return _groups[key]


def stop_all() -> None:
    """Stop every group this session started (pytest_sessionfinish, and at exit)."""
    _groups.clear()
    while _directories:
        directory = _directories.pop()
        stop_clusters(directory)
        shutil.rmtree(directory, ignore_errors=True)


atexit.register(stop_all)
