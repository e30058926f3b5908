"""Path and query parameters the routes share, with the constraints Kubernetes puts on them.

FastAPI checks them (a value outside is a 400 naming it, see manager.api.errors) and the OpenAPI
documents them, so a client that follows the schema sends only requests the routes take.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

from kueue_api.validation import DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN
from manager import states

# As POST /clusters takes them (ClusterCreate.name) and MultiKueueCluster objects are named.
CLUSTER_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"

ClusterName = Annotated[
    str, Path(description="The worker cluster", max_length=253, pattern=CLUSTER_NAME_PATTERN)
]
Namespace = Annotated[
    str, Path(description="DNS-1123 label", max_length=63, pattern=DNS_LABEL_PATTERN)
]
JobName = Annotated[
    str, Path(description="The Job's or JobSet's name", max_length=63, pattern=DNS_LABEL_PATTERN)
]
QueueName = Annotated[
    str,
    Path(description="A ClusterQueue or LocalQueue", max_length=253, pattern=DNS_SUBDOMAIN_PATTERN),
]
Limit = Annotated[int, Query(description="At most this many items", ge=1, le=1000)]
# Documented as an enum; the route checks it (naming the states in its 400).
StateFilter = Annotated[
    str | None,
    Query(
        description="Only workloads in this state",
        json_schema_extra={"enum": list(states.WORKLOAD_STATES)},
    ),
]
NamespaceFilter = Annotated[
    str | None, Query(description="Only this namespace", max_length=63, pattern=DNS_LABEL_PATTERN)
]
QueueFilter = Annotated[
    str | None,
    Query(description="Only this LocalQueue", max_length=253, pattern=DNS_SUBDOMAIN_PATTERN),
]
ClusterFilter = Annotated[
    str | None,
    Query(
        description="Only workloads won by this cluster",
        max_length=253,
        pattern=CLUSTER_NAME_PATTERN,
    ),
]
