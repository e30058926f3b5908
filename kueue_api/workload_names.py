"""Workload names derived from their owner, by Kueue's scheme, so both name a Job's Workload alike.

`<lower(kind)>-<owner name>` cut to fit, then `-` and 5 hex digits of a SHA-1 over kind, group,
owner name and uid (jobframework.GetWorkloadNameForOwnerWithGVK).
"""

from __future__ import annotations

import hashlib

_HASH_LENGTH = 5
_MAX_NAME_LENGTH = 253
_MAX_PREFIX_LENGTH = _MAX_NAME_LENGTH - 1 - _HASH_LENGTH


def workload_name_for_owner(
    owner_name: str, owner_uid: str, kind: str, group: str, extra: str = ""
) -> str:
    """`extra` tells apart the Workloads of one owner: an elastic job's slices carry the job's
    generation (GenerateWorkloadNameWithExtra)."""
    prefix = f"{kind.lower()}-{owner_name}"[:_MAX_PREFIX_LENGTH]
    parts = (kind, group, owner_name, owner_uid, *((extra,) if extra else ()))
    digest = hashlib.sha1("\n".join(parts).encode()).hexdigest()
    return f"{prefix}-{digest[:_HASH_LENGTH]}"
