"""ManagerSettings: where the manager looks for worker kubeconfig Secrets."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from manager.settings import MANAGER_NAMESPACE, ManagerSettings


def _settings() -> ManagerSettings:
    return ManagerSettings(
        database_url="postgresql+asyncpg://mkq@localhost/mkq",
        api_token="0123456789abcdef",
        encryption_key=Fernet.generate_key().decode(),
    )


def test_kubeconfig_secrets_are_read_from_the_managers_own_namespace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not Kueue's kueue-system: the manifests let the manager read Secrets in mkq-system only."""
    monkeypatch.delenv("MKQ_KUEUE_NAMESPACE", raising=False)
    assert MANAGER_NAMESPACE == "mkq-system"
    assert _settings().kueue_namespace == MANAGER_NAMESPACE


def test_mkq_kueue_namespace_overrides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MKQ_KUEUE_NAMESPACE", "kueue-system")
    assert _settings().kueue_namespace == "kueue-system"
