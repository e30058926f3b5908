"""The Kueue Configuration's multiKueue section as manager settings: Kueue's dispatcher names
mapped to our modes, and MKQ_* variables over the file over the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from kueue_api.loader import ConfigurationFileError, load_configuration, load_text
from kueue_api.models.config import Configuration
from manager.dispatch.nomination import DispatchMode
from manager.settings import (
    configuration_settings,
    configuration_warnings,
    dispatch_mode_for,
    load_settings,
)

HEADER = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
FULL = HEADER + (
    "multiKueue:\n"
    "  gcInterval: 2m\n"
    "  origin: team-a\n"
    "  workerLostTimeout: 1h\n"
    "  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental\n"
    "  incrementalDispatcherConfig:\n"
    "    stepSize: 5\n"
)
OVERRIDABLE = (
    "MKQ_GC_SECONDS",
    "MKQ_ORIGIN",
    "MKQ_WORKER_LOST_TIMEOUT_SECONDS",
    "MKQ_DISPATCHER",
    "MKQ_INCREMENTAL_STEP_SIZE",
    "MKQ_INCREMENTAL_CONFIG_ORDER",
)


def _configuration(text: str) -> Configuration:
    result = load_text(text, "kueue.yaml")
    assert result.ok, [str(error) for error in result.errors]
    (item,) = result.objects
    assert isinstance(item.obj, Configuration)
    return item.obj


@pytest.fixture(autouse=True)
def _required(monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings every manager needs, and none of the ones under test set."""
    monkeypatch.setenv("MKQ_DATABASE_URL", "postgresql+asyncpg://mkq@localhost/mkq")
    monkeypatch.setenv("MKQ_API_TOKEN", "0123456789abcdef")
    monkeypatch.setenv("MKQ_ENCRYPTION_KEY", Fernet.generate_key().decode())
    for name in OVERRIDABLE:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("name", "mode"),
    [
        ("kueue.x-k8s.io/multikueue-dispatcher-all-at-once", DispatchMode.ALL_AT_ONCE),
        ("kueue.x-k8s.io/multikueue-dispatcher-incremental", DispatchMode.INCREMENTAL),
        ("example.com/my-dispatcher", DispatchMode.EXTERNAL),
        ("BestFit", DispatchMode.BEST_FIT),
        ("Incremental", DispatchMode.INCREMENTAL),
        ("External", DispatchMode.EXTERNAL),
    ],
)
def test_dispatcher_names(name: str, mode: DispatchMode) -> None:
    assert dispatch_mode_for(name) is mode


def test_the_file_sets_every_multikueue_setting() -> None:
    settings = load_settings(_configuration(FULL))
    assert settings.gc_seconds == 120
    assert settings.origin == "team-a"
    assert settings.worker_lost_timeout_seconds == 3600
    assert settings.dispatcher is DispatchMode.INCREMENTAL
    assert settings.incremental_step_size == 5
    assert settings.dispatch_config().step_size == 5
    assert settings.dispatch_config().config_order is True


def test_the_environment_overrides_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MKQ_ORIGIN", "from-env")
    monkeypatch.setenv("MKQ_DISPATCHER", "BestFit")
    monkeypatch.setenv("mkq_gc_seconds", "7")  # matched without case, as pydantic does
    settings = load_settings(_configuration(FULL))
    assert (settings.origin, settings.dispatcher, settings.gc_seconds) == (
        "from-env",
        DispatchMode.BEST_FIT,
        7,
    )
    assert settings.worker_lost_timeout_seconds == 3600  # not overridden: the file's


def test_without_a_file_or_variable_the_defaults_are_kueues() -> None:
    settings = load_settings(None)
    from_empty_file = load_settings(_configuration(HEADER))
    for each in (settings, from_empty_file):
        assert each.gc_seconds == 60
        assert each.origin == "multikueue"
        assert each.worker_lost_timeout_seconds == 900
        assert each.dispatcher is DispatchMode.ALL_AT_ONCE
        assert each.incremental_step_size == 3


def test_only_fields_written_in_the_file_are_taken() -> None:
    assert configuration_settings(_configuration(HEADER + "multiKueue:\n  origin: x\n")) == {
        "origin": "x"
    }


def test_a_zero_gc_interval_turns_gc_off_and_a_zero_lost_timeout_is_accepted() -> None:
    text = HEADER + "multiKueue:\n  gcInterval: 0s\n  workerLostTimeout: '0'\n"
    settings = load_settings(_configuration(text))
    assert (settings.gc_seconds, settings.worker_lost_timeout_seconds) == (0, 0)


def test_feature_gates_switch_step_size_and_config_order_as_in_kueue() -> None:
    text = FULL + (
        "featureGates:\n"
        "  MultiKueueIncrementalDispatcherConfig: false\n"
        "  MultiKueueIncrementalDispatcherRespectConfigOrder: false\n"
    )
    settings = load_settings(_configuration(text))
    assert settings.incremental_step_size == 3  # the file's stepSize is ignored with its gate off
    assert settings.dispatch_config().config_order is False


def test_mkq_dispatcher_takes_kueues_names_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MKQ_DISPATCHER", "kueue.x-k8s.io/multikueue-dispatcher-incremental")
    assert load_settings().dispatcher is DispatchMode.INCREMENTAL


def test_what_the_manager_does_not_do_is_said() -> None:
    text = HEADER + (
        "multiKueue:\n"
        "  dispatcherName: example.com/mine\n"
        "  externalFrameworks:\n  - name: Foo.v1.example.com\n"
        "  clusterProfile:\n    accessProviders: []\n"
    )
    warnings = configuration_warnings(_configuration(text))
    assert len(warnings) == 3
    assert "'example.com/mine'" in warnings[0] and "External" in warnings[0]
    assert warnings[1].startswith("multiKueue.externalFrameworks is not supported")
    assert warnings[2].startswith("multiKueue.clusterProfile is not supported")
    assert configuration_warnings(_configuration(FULL)) == []


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ("  gcInterval: -1m\n", "multiKueue.gcInterval: Invalid value"),
        ("  workerLostTimeout: soon\n", "multiKueue.workerLostTimeout: 'soon' is not a duration"),
        ("  origin: 'not a label'\n", "multiKueue.origin: Invalid value"),
        ("  dispatcherName: 3\n", "multiKueue.dispatcherName: Input should be a valid string"),
        ("  gcIntervall: 1m\n", "multiKueue.gcIntervall: unknown field"),
        (
            "  incrementalDispatcherConfig:\n    stepSize: 2\n",
            "multiKueue.incrementalDispatcherConfig: Invalid value",
        ),
        (
            "  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental\n"
            "  incrementalDispatcherConfig:\n    stepSize: 0\n",
            "multiKueue.incrementalDispatcherConfig.stepSize: Invalid value: 0",
        ),
    ],
)
def test_a_bad_file_names_the_file_and_the_field(tmp_path: Path, section: str, field: str) -> None:
    path = tmp_path / "kueue.yaml"
    path.write_text(HEADER + "multiKueue:\n" + section)
    with pytest.raises(ConfigurationFileError) as raised:
        load_configuration(path)
    assert str(path) in str(raised.value)
    assert field in str(raised.value)


DECLARED = HEADER + (
    "integrations:\n"
    "  declarativeKinds:\n"
    "  - {group: example.com, version: v1, kind: Trainer, plural: trainers,\n"
    "     podSets: [{name: main, templatePath: spec.template, countPath: spec.replicas}],\n"
    "     conditions: {succeeded: [Succeeded]}}\n"
)


def test_the_files_declared_kinds_are_dispatched_beside_the_built_in_ones() -> None:
    kinds = load_settings(_configuration(DECLARED)).job_kinds()
    assert kinds.named("Trainer").resource.plural == "trainers"
    assert kinds.named("Job").resource.plural == "jobs"
    assert load_settings().job_kinds().declared == ()


def test_a_declared_kind_in_the_environment_is_checked_as_in_a_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bad = '[{"group": "example.com", "version": "v1", "kind": "Trainer", "plural": "trainers",'
    bad += ' "podSets": [{"name": "main", "templatePath": "template"}],'
    bad += ' "conditions": {"succeeded": ["Succeeded"]}}]'
    monkeypatch.setenv("MKQ_DECLARATIVE_KINDS", bad)
    with pytest.raises(ValueError, match=r"declarativeKinds\[0\]\.podSets\[0\]\.templatePath"):
        load_settings()
