"""The README's table of Configuration defaults ("#### Configuration defaults"), checked both
ways: its "Kueue's default" column against Kueue's sources (transcribed below, each with the
file it comes from), its "ours" column against what the agent really runs with when started
without `--config`, by `mkq agent run` and as a library. And a file that leaves a field out
gets Kueue's default for it, unless the table says why not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kueue_api.models.base import format_duration
from kueue_api.models.config import Configuration
from kueue_api.webhooks.mutation import Defaulting
from mkq.commands.agent import agent_settings, run
from worker_agent.agent import AgentConfig, settings_from
from worker_agent.engine import EngineConfig, EngineState
from worker_agent.engine.dra import DeviceClassMapper, DRAFeatures
from worker_agent.engine_feed import EngineFeed
from worker_agent.webhooks import WebhookConfig, defaulting_for

README = Path(__file__).resolve().parents[3] / "README.md"
HEADING = "#### Configuration defaults"

# Kueue's defaults, as its sources at the mirrored commit say them, in the table's notation
# (Go durations as Duration.String() writes them, lists in brackets, null for an unset pointer).
KUEUE: dict[str, str] = {
    # apis/config/v1beta2/defaults.go: DefaultNamespace, used when Kueue does not run in a pod.
    "namespace": "kueue-system",
    # apis/config/v1beta2/configuration_types.go: "Defaults to false".
    "manageJobsWithoutQueueName": "false",
    # defaults.go: SetDefaults_Configuration, ManagedJobsNamespaceSelector.
    "managedJobsNamespaceSelector": "kubernetes.io/metadata.name NotIn [kube-system, kueue-system]",
    # defaults.go: defaultJobFrameworkName when the list is empty.
    "integrations.frameworks": "[batch/job]",
    # defaults.go: DefaultWaitForPodsReadyTimeout (WaitForPodsReady is non-nil by default).
    "waitForPodsReady.timeout": "30m0s",
    # defaults.go: BlockAdmission = false.
    "waitForPodsReady.blockAdmission": "false",
    # defaults.go: RecoveryTimeout = &WaitForPodsReady.Timeout.
    "waitForPodsReady.recoveryTimeout": "timeout",
    # defaults.go: EvictionTimestamp.
    "waitForPodsReady.requeuingStrategy.timestamp": "Eviction",
    # configuration_types.go: "Defaults to null" (not defaulted in defaults.go).
    "waitForPodsReady.requeuingStrategy.backoffLimitCount": "null",
    # defaults.go: DefaultRequeuingBackoffBaseSeconds, DefaultRequeuingBackoffMaxSeconds.
    "waitForPodsReady.requeuingStrategy.backoffBaseSeconds": "60",
    "waitForPodsReady.requeuingStrategy.backoffMaxSeconds": "3600",
    # defaults.go leaves FairSharing nil (off); pkg/config/validation.go (validateFairSharing)
    # requires preemptionStrategies once it is set.
    "fairSharing": "null",
    "fairSharing.preemptionStrategies": "required",
    # defaults.go leaves AdmissionFairSharing nil; usageHalfLifeTime is not defaulted (Go's
    # zero duration); usageSamplingInterval defaults to 5 minutes.
    "admissionFairSharing": "null",
    "admissionFairSharing.usageHalfLifeTime": "0s",
    "admissionFairSharing.usageSamplingInterval": "5m0s",
    # cmd/kueue/main.go: quotaCheckStrategy falls back to QuotaCheckBlockUndeclared.
    "resources.quotaCheckStrategy": "BlockUndeclared",
    # defaults.go leaves Resources nil: no prefixes, no mappings.
    "resources.excludeResourcePrefixes": "[]",
    # defaults.go: DefaultResourceTransformationStrategy (Retain).
    "resources.transformations[].strategy": "Retain",
    "resources.deviceClassMappings": "[]",
    # pkg/features/kube_features.go: the default of each gate at its newest version.
    "featureGates.DisableWaitForPodsReady": "false",
    "featureGates.LocalQueueDefaulting": "true",  # GA (CHANGELOG-0.17); the gate is gone
    "featureGates.KueueDRAIntegration": "true",
    "featureGates.KueueDRARejectWorkloadsWhenDRADisabled": "true",
    "featureGates.KueueDRAIntegrationExtendedResource": "true",
    "featureGates.KueueDRAIntegrationPartitionableDevices": "true",
    "featureGates.KueueDRAIntegrationConsumableCapacity": "false",
    "featureGates.TASBalancedPlacement": "false",  # alpha since 0.15
    # defaults.go: configv1alpha1.RecommendedDefaultLeaderElectionConfiguration (component-base:
    # leaderElect true, 15s, 10s, 2s; defaults.go's DefaultLeaderElection* say the same).
    "leaderElection.leaderElect": "true",
    "leaderElection.leaseDuration": "15s",
    "leaderElection.renewDeadline": "10s",
    "leaderElection.retryPeriod": "2s",
}

FILE_DIFFERS = frozenset({"fairSharing.preemptionStrategies"})
"""Fields whose default for a file that omits them is not Kueue's (the table says why)."""


# -- the table -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    kueue: str
    ours: str
    why: str


_CODE = re.compile(r"`([^`]*)`")


def _value(cell: str) -> str:
    """A cell's value: its first code span (text after it is commentary)."""
    match = _CODE.search(cell)
    assert match, f"no `value` in {cell!r}"
    return match.group(1)


def parse_table(text: str, heading: str = HEADING) -> dict[str, Row]:
    """The rows of the first markdown table after `heading`: field -> row."""
    lines = text.splitlines()
    assert heading in lines, f"{heading!r} is not in the README"
    rows: dict[str, Row] = {}
    in_table = False
    for line in lines[lines.index(heading) + 1 :]:
        if not line.startswith("|"):
            if in_table:
                break
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not in_table:  # the header and the |---| line
            assert cells[:3] == ["field", "Kueue's default", "ours"], cells
            in_table = True
            continue
        if set(cells[0]) <= {"-", ":"}:
            continue
        field = _value(cells[0])
        assert field not in rows, f"{field} is listed twice"
        rows[field] = Row(_value(cells[1]), _value(cells[2]), cells[3] if len(cells) > 3 else "")
    return rows


ROWS = parse_table(README.read_text(encoding="utf-8"))


def test_the_parser_reads_values_and_reasons() -> None:
    text = "\n".join(
        [
            HEADING,
            "",
            "| field | Kueue's default | ours | why they differ |",
            "|---|---|---|---|",
            "| `a.b` | `null` (off) | `1` | because |",
            "| `c` | `x` | `x` | |",
            "",
            "| not | this | table |",
        ]
    )
    assert parse_table(text) == {"a.b": Row("null", "1", "because"), "c": Row("x", "x", "")}


# -- our side --------------------------------------------------------------------------------

BASE_DOCUMENT = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}


@dataclass(frozen=True)
class Agent:
    """An agent as started by `mkq agent run` (cli) or built as a library, with or without a
    Configuration document."""

    config: AgentConfig
    namespace: str
    """The agent's own namespace (its webhooks' --webhook-namespace)."""
    document: dict[str, Any] | None
    cli: bool

    @property
    def engine(self) -> EngineConfig:
        """The engine's settings as the scheduling loop sets them up."""
        feed = EngineFeed(
            EngineState(self.config.engine_config()), self.config.engine_configuration()
        )
        return feed.state.config

    @property
    def defaulting(self) -> Defaulting:
        return defaulting_for(self.config.configuration, self.namespace)

    @property
    def dra(self) -> DRAFeatures:
        return DRAFeatures.from_configuration(self.config.engine_configuration())

    @property
    def mapper(self) -> DeviceClassMapper:
        return DeviceClassMapper.from_configuration(self.config.engine_configuration())

    def with_file(self, **fields: Any) -> Agent:
        """The same agent given a Configuration file with these fields (and its own)."""
        return build_agent({**(self.document or BASE_DOCUMENT), **fields}, cli=self.cli)


def build_agent(document: dict[str, Any] | None, *, cli: bool) -> Agent:
    configuration = None if document is None else Configuration.model_validate(document)
    if not cli:
        settings = {} if configuration is None else settings_from(configuration)
        namespace = WebhookConfig(port=0).namespace
        return Agent(AgentConfig(cluster_name="w", **settings), namespace, document, cli)
    ctx = run.make_context("run", ["--kubeconfig", "kubeconfig", "--cluster-name", "w"])
    params = ctx.params
    config = AgentConfig(  # as `run` builds it
        cluster_name="w",
        leader_elect=params["leader_elect"],
        lease_namespace=params["lease_namespace"],
        lease_duration=params["lease_duration"],
        renew_deadline=params["renew_deadline"],
        retry_period=params["retry_period"],
        report_interval=params["report_interval"],
        **agent_settings(ctx, configuration),
    )
    return Agent(config, params["webhook_namespace"], document, cli)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _list(values: Iterable[str]) -> str:
    return f"[{', '.join(values)}]"


def _seconds(value: float) -> str:
    return format_duration(timedelta(seconds=value))


def _integer(value: float) -> str:
    assert value == int(value), value
    return str(int(value))


def _selector(agent: Agent) -> str:
    selector = agent.defaulting.managed_jobs_namespace_selector
    if selector is None:  # no Configuration: the webhooks leave out these namespaces
        excluded = sorted(agent.defaulting.excluded_namespaces)
        return f"kubernetes.io/metadata.name NotIn {_list(excluded)}"
    assert set(selector) == {"matchExpressions"}, selector
    (expression,) = selector["matchExpressions"]
    return f"{expression['key']} {expression['operator']} {_list(expression['values'])}"


def _recovery(agent: Agent) -> str:
    recovery = agent.config.pods_ready_recovery_timeout
    return "timeout" if recovery is None else _seconds(recovery)


def _null_or_set(value: object) -> str:
    return "null" if value is None or value is False else "set"


OURS: dict[str, Callable[[Agent], str]] = {
    "namespace": lambda a: (
        a.config.configuration.namespace if a.config.configuration else a.namespace
    ),
    "manageJobsWithoutQueueName": lambda a: _bool(a.defaulting.manage_jobs_without_queue_name),
    "managedJobsNamespaceSelector": _selector,
    "integrations.frameworks": lambda a: _list(sorted(a.defaulting.frameworks)),
    "waitForPodsReady.timeout": lambda a: _seconds(a.config.pods_ready_timeout or 0),
    "waitForPodsReady.blockAdmission": lambda a: _bool(a.engine.block_admission),
    "waitForPodsReady.recoveryTimeout": _recovery,
    "waitForPodsReady.requeuingStrategy.timestamp": lambda a: (
        "Creation" if a.engine.requeue_by_creation else "Eviction"
    ),
    "waitForPodsReady.requeuingStrategy.backoffLimitCount": lambda a: (
        "null" if a.config.requeue_backoff_limit is None else str(a.config.requeue_backoff_limit)
    ),
    "waitForPodsReady.requeuingStrategy.backoffBaseSeconds": lambda a: _integer(
        a.config.requeue_backoff_base
    ),
    "waitForPodsReady.requeuingStrategy.backoffMaxSeconds": lambda a: _integer(
        a.config.requeue_backoff_max
    ),
    "fairSharing": lambda a: _null_or_set(a.engine.fair_sharing),
    "fairSharing.preemptionStrategies": lambda a: _list(
        a.with_file(fairSharing={}).engine.fair_sharing_strategies
    ),
    "admissionFairSharing": lambda a: _null_or_set(a.engine.admission_fair_sharing),
    "admissionFairSharing.usageHalfLifeTime": lambda a: _seconds(
        _afs(a.with_file(admissionFairSharing={})).half_life
    ),
    "admissionFairSharing.usageSamplingInterval": lambda a: _seconds(
        _afs(a.with_file(admissionFairSharing={})).sampling_interval
    ),
    "resources.quotaCheckStrategy": lambda a: (
        "IgnoreUndeclared" if a.engine.ignore_undeclared_resources else "BlockUndeclared"
    ),
    "resources.excludeResourcePrefixes": lambda a: _list(a.engine.excluded_resource_prefixes),
    "resources.transformations[].strategy": lambda a: (
        "Replace"
        if a.with_file(
            resources={"transformations": [{"input": "cpu", "outputs": {"example.com/x": "1"}}]}
        )
        .engine.transformations[0]
        .replace
        else "Retain"
    ),
    "resources.deviceClassMappings": lambda a: _list(sorted(a.mapper.logical)),
    "featureGates.DisableWaitForPodsReady": lambda a: _bool(a.config.pods_ready_timeout is None),
    "featureGates.LocalQueueDefaulting": lambda a: _bool(a.defaulting.local_queue_defaulting),
    "featureGates.KueueDRAIntegration": lambda a: _bool(a.dra.enabled),
    "featureGates.KueueDRARejectWorkloadsWhenDRADisabled": lambda a: _bool(
        a.dra.reject_when_disabled
    ),
    "featureGates.KueueDRAIntegrationExtendedResource": lambda a: _bool(a.dra.extended_resources),
    "featureGates.KueueDRAIntegrationPartitionableDevices": lambda a: _bool(
        a.dra.partitionable_devices
    ),
    "featureGates.KueueDRAIntegrationConsumableCapacity": lambda a: _bool(
        a.dra.consumable_capacity
    ),
    "featureGates.TASBalancedPlacement": lambda a: _bool(a.engine.tas_balanced_placement),
    "leaderElection.leaderElect": lambda a: _bool(a.config.leader_elect),
    "leaderElection.leaseDuration": lambda a: _seconds(a.config.lease_duration),
    "leaderElection.renewDeadline": lambda a: _seconds(a.config.renew_deadline),
    "leaderElection.retryPeriod": lambda a: _seconds(a.config.retry_period),
}


def _afs(agent: Agent) -> Any:
    afs = agent.engine.admission_fair_sharing
    assert afs is not None
    return afs


# -- the checks ------------------------------------------------------------------------------


def test_the_table_kueues_sources_and_our_code_name_the_same_fields() -> None:
    assert sorted(ROWS) == sorted(KUEUE)
    assert sorted(OURS) == sorted(KUEUE)


@pytest.mark.parametrize("field", sorted(KUEUE))
def test_kueues_column_is_what_kueues_sources_say(field: str) -> None:
    assert ROWS[field].kueue == KUEUE[field]


@pytest.mark.parametrize("cli", [True, False], ids=["mkq-agent-run", "AgentConfig"])
@pytest.mark.parametrize("field", sorted(KUEUE))
def test_our_column_is_the_agent_without_a_configuration(field: str, cli: bool) -> None:
    assert OURS[field](build_agent(None, cli=cli)) == ROWS[field].ours


@pytest.mark.parametrize("cli", [True, False], ids=["mkq-agent-run", "AgentConfig"])
@pytest.mark.parametrize("field", sorted(KUEUE))
def test_a_file_without_the_field_gets_kueues_default(field: str, cli: bool) -> None:
    ours = OURS[field](build_agent(dict(BASE_DOCUMENT), cli=cli))
    if field in FILE_DIFFERS:
        assert ours != KUEUE[field] and ROWS[field].why
    else:
        assert ours == KUEUE[field]


@pytest.mark.parametrize("field", sorted(KUEUE))
def test_a_difference_says_why(field: str) -> None:
    row = ROWS[field]
    if row.kueue != row.ours or field in FILE_DIFFERS:
        assert row.why, f"{field}: ours ({row.ours}) differs from Kueue's ({row.kueue})"


def test_a_changed_default_would_show() -> None:
    """The "ours" readings follow the code: a non-default agent reads differently."""
    agent = build_agent(None, cli=False)
    changed = Agent(
        AgentConfig(cluster_name="w", pods_ready_timeout=600.0, block_admission=True),
        agent.namespace,
        None,
        cli=False,
    )
    assert OURS["waitForPodsReady.timeout"](changed) == "10m0s"
    assert OURS["waitForPodsReady.blockAdmission"](changed) == "true"
    strict = agent.with_file(resources={"quotaCheckStrategy": "IgnoreUndeclared"})
    assert OURS["resources.quotaCheckStrategy"](strict) == "IgnoreUndeclared"
    gated = agent.with_file(featureGates={"KueueDRAIntegration": False})
    assert OURS["featureGates.KueueDRAIntegration"](gated) == "false"
