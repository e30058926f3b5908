"""The agent runs the kinds its Configuration declares (integrations.declarativeKinds): its
webhooks take them as enabled frameworks, beside the file's built-in ones."""

from __future__ import annotations

from pathlib import Path

from kueue_api.jobs import DeclarativeKind
from kueue_api.loader import load_configuration
from worker_agent.webhooks import defaulting_for

CONFIGURATION = Path(__file__).parents[2] / "e2e" / "data" / "trainer-configuration.yaml"


def test_a_declared_kind_is_an_enabled_framework_of_the_webhooks() -> None:
    defaulting = defaulting_for(load_configuration(CONFIGURATION), "mkq-system")
    assert defaulting.frameworks == {"batch/job", "example.com/trainer"}
    assert isinstance(defaulting.kinds.named("Trainer"), DeclarativeKind)
    assert defaulting.framework_of(("example.com", "Trainer")) == "example.com/trainer"


def test_without_a_configuration_only_the_built_in_kinds_are_known() -> None:
    defaulting = defaulting_for(None, "mkq-system")
    assert defaulting.kinds.declared == ()
    assert defaulting.framework_of(("example.com", "Trainer")) is None
