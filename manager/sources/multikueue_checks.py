"""The `Active` condition of a MultiKueue AdmissionCheck, as Kueue words it: pure functions.

Kueue's AdmissionCheck reconciler (`pkg/controller/admissionchecks/multikueue/admissioncheck.go`)
keeps a MultiKueue check Active while at least one cluster of its MultiKueueConfig is usable,
and names the clusters that are not, so an operator reading `kubectl describe admissioncheck`
sees which worker to look at. Tools and dashboards match on its reasons; we use the same ones:

- `BadConfig` (False): the parameters reference is unusable or the MultiKueueConfig is missing;
- `NoUsableClusters` (False): every cluster of the config is missing or inactive;
- `SomeActiveClusters` (True): some, not all, are missing or inactive;
- `Active` (True): none is (an empty cluster list included, as in Kueue).

Kueue reads a cluster's usability from its MultiKueueCluster's own Active condition; the manager
writes that condition from its connection, so "connected" here is the same fact.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

from kueue_api.api_resources import KUEUE_GROUP

CONFIG_KIND = "MultiKueueConfig"
ACTIVE_MESSAGE = "The admission check is active"
# Kueue's `ErrNilParametersRef` and `ErrBadParametersRef` (pkg/util/admissioncheck).
_NIL_REFERENCE = "missing parameters reference"
_BAD_REFERENCE = "bad parameters reference"


class ActiveCondition(NamedTuple):
    """What the check's Active condition should say: its status, reason and message."""

    active: bool
    reason: str
    message: str


def _go_list(names: Sequence[str]) -> str:
    """A list of names as Go's `%v` prints a []string, which Kueue's messages use."""
    return "[" + " ".join(names) + "]"


def _bad_config(problem: str) -> ActiveCondition:
    return ActiveCondition(
        False, "BadConfig", f"Cannot load the AdmissionChecks parameters: {problem}"
    )


def reference_problem(parameters: Mapping[str, Any] | None) -> str | None:
    """Why a check's `spec.parameters` cannot name a MultiKueueConfig, or None if it can.

    Kueue's `refValidForGK` (pkg/util/admissioncheck/admissioncheck.go), in its order and words:
    a reference that is absent, unnamed, or of another group or kind loads no config.
    """
    if parameters is None:
        return _NIL_REFERENCE
    if not parameters.get("name"):
        return f"empty name: {_BAD_REFERENCE}"
    group = parameters.get("apiGroup") or ""
    if group != KUEUE_GROUP:
        return f'wrong group "{group}", expecting "{KUEUE_GROUP}": {_BAD_REFERENCE}'
    kind = parameters.get("kind") or ""
    if kind != CONFIG_KIND:
        return f'wrong kind "{kind}", expecting "{CONFIG_KIND}": {_BAD_REFERENCE}'
    return None


def active_condition(
    config_name: str,
    clusters: Sequence[str] | None,
    existing: Collection[str],
    connected: Collection[str],
) -> ActiveCondition:
    """The check's Active condition from its MultiKueueConfig and the clusters' state.

    `clusters` is the config's `spec.clusters` in order (None: the config does not exist),
    `existing` the MultiKueueClusters that exist, `connected` those the manager is connected
    to. Clusters are named in the config's order, missing ones before inactive ones, as Kueue
    does.
    """
    if clusters is None:
        # The apiserver's NotFound text for the config, which Kueue's message embeds.
        return _bad_config(f'multikueueconfigs.{KUEUE_GROUP} "{config_name}" not found')
    missing = [name for name in clusters if name not in existing]
    inactive = [name for name in clusters if name in existing and name not in connected]
    unusable = len(missing) + len(inactive)
    if unusable == 0:
        return ActiveCondition(True, "Active", ACTIVE_MESSAGE)
    parts = []
    if missing:
        parts.append(f"Missing clusters: {_go_list(missing)}")
    if inactive:
        parts.append(f"Inactive clusters: {_go_list(inactive)}")
    message = ", ".join(parts)
    if unusable < len(clusters):
        return ActiveCondition(True, "SomeActiveClusters", message)
    return ActiveCondition(False, "NoUsableClusters", message)


def check_condition(
    parameters: Mapping[str, Any] | None,
    configs: Mapping[str, Sequence[str]],
    existing: Collection[str],
    connected: Collection[str],
) -> ActiveCondition:
    """The Active condition of a check with these `spec.parameters`, given every
    MultiKueueConfig that exists (`configs`: name -> spec.clusters) and the clusters' state."""
    problem = reference_problem(parameters)
    if problem is not None or parameters is None:
        return _bad_config(problem or _NIL_REFERENCE)
    name = str(parameters["name"])
    return active_condition(name, configs.get(name), existing, connected)
