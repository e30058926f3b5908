"""deploy/base/agent/webhooks.yaml is what kueue_api/webhooks/configurations.py builds."""

from __future__ import annotations

from pathlib import Path

import yaml

from kueue_api.webhooks.configurations import visibility_api_service, webhook_configurations

AGENT = Path(__file__).resolve().parents[3] / "deploy" / "base" / "agent"
DEPLOYED = AGENT / "webhooks.yaml"


def test_the_deployed_configurations_are_the_generated_ones() -> None:
    documents = [d for d in yaml.safe_load_all(DEPLOYED.read_text()) if d]
    configurations = [d for d in documents if d["kind"] != "Service"]
    assert configurations == webhook_configurations(
        "mkq-system", service=("mkq-system", "mkq-agent-webhook")
    )
    (service,) = [d for d in documents if d["kind"] == "Service"]
    assert service["metadata"]["name"] == "mkq-agent-webhook"


def test_the_deployed_visibility_api_service_is_the_generated_one() -> None:
    documents = [d for d in yaml.safe_load_all((AGENT / "visibility.yaml").read_text()) if d]
    (api_service,) = [d for d in documents if d["kind"] == "APIService"]
    # The Service is the webhooks': one server answers both.
    assert api_service == visibility_api_service(("mkq-system", "mkq-agent-webhook"))
    readable = {
        rule["resources"][0] for d in documents if d["kind"] == "ClusterRole" for rule in d["rules"]
    }
    assert readable == {"clusterqueues/pendingworkloads", "localqueues/pendingworkloads"}


def test_scoped_as_kueue_scopes_its_webhooks() -> None:
    mutating, validating = webhook_configurations("mkq-system", url="https://127.0.0.1:9443")
    for webhook in [*mutating["webhooks"], *validating["webhooks"]]:
        assert webhook["failurePolicy"] == "Fail"
        assert webhook["sideEffects"] == "None"
        excluded = webhook["namespaceSelector"]["matchExpressions"][0]
        assert excluded["operator"] == "NotIn"
        assert set(excluded["values"]) == {"kube-system", "mkq-system"}
        assert webhook["clientConfig"]["url"].startswith("https://127.0.0.1:9443/")
    rules = {w["name"]: w["rules"][0] for w in mutating["webhooks"]}
    assert rules["mjob.mkq.dev"]["operations"] == ["CREATE"]
    pod = next(w for w in mutating["webhooks"] if w["name"] == "mpod.mkq.dev")
    assert pod["objectSelector"]["matchExpressions"][0]["key"] == "kueue.x-k8s.io/queue-name"
