"""The agent's admission webhooks: Kueue's defaulting and validation (kueue_api.webhooks) with
the agent's informer caches as the view of the cluster, certificates kept in a Secret of the
agent's namespace, and their CA written into the webhook configurations.

Every replica serves (not only the leader): kube-apiserver may call any pod behind the
Service, and the informers that answer run on all of them.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_api.jobs import KINDS, POD_PARENT_KINDS, job_kinds
from kueue_api.jobs import pod as pods
from kueue_api.models.config import Configuration
from kueue_api.webhooks.configurations import (
    MUTATING_NAME,
    VALIDATING_NAME,
    webhook_configurations,
)
from kueue_api.webhooks.mutation import Defaulting, frameworks_of
from kueue_api.webhooks.server import Certificates, WebhookServer, admission_handlers
from worker_agent.informers import InformerSet
from worker_agent.kube_client import ApiError, KubeClient
from worker_agent.resources import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    WORKLOADS,
    ResourceType,
)

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]

SECRETS = ResourceType("", "v1", "secrets", "Secret", True)
MUTATING = ResourceType(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    False,
)
VALIDATING = ResourceType(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    False,
)
SECRET_NAME = "mkq-agent-webhook-cert"
# The frameworks the agent runs when no Configuration names them.
AGENT_FRAMEWORKS = frozenset(
    {
        *(kind.framework for kind in KINDS),
        *(kind.framework for kind in POD_PARENT_KINDS),
        pods.FRAMEWORK,
    }
)


@dataclass(frozen=True)
class WebhookConfig:
    """How the agent serves its webhooks (flags --webhook-*)."""

    port: int
    host: str = "0.0.0.0"
    # The agent's own namespace: its certificate Secret lives there, and the webhooks leave it
    # out (as they leave out kube-system).
    namespace: str = "mkq-system"
    # In-cluster: the Service (its DNS names go in the certificate) and the configurations
    # deploy/ installed, whose caBundle the agent fills. Out of cluster (demo, tests): the
    # URL kube-apiserver reaches this server at; the agent then writes the configurations.
    service: str = "mkq-agent-webhook"
    url: str | None = None
    extra_names: tuple[str, ...] = ("127.0.0.1", "localhost")


class InformerView:
    """kueue_api.webhooks.mutation.ClusterView over the agent's caches."""

    def __init__(self, informers: InformerSet) -> None:
        self._informers = informers

    def local_queue(self, namespace: str, name: str) -> JsonObject | None:
        return self._informers.cache(LOCAL_QUEUES).get(f"{namespace}/{name}")

    def cluster_queue(self, name: str) -> JsonObject | None:
        return self._informers.cache(CLUSTER_QUEUES).get(name)

    def admission_check(self, name: str) -> JsonObject | None:
        if ADMISSION_CHECKS not in self._informers:
            return None
        return self._informers.cache(ADMISSION_CHECKS).get(name)

    def workload(self, namespace: str, name: str) -> JsonObject | None:
        return self._informers.cache(WORKLOADS).get(f"{namespace}/{name}")

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        namespace = self._informers.cache(NAMESPACES).get(name)
        if namespace is None:
            return None
        return dict((namespace.get("metadata") or {}).get("labels") or {})


def defaulting_for(configuration: Configuration | None, own_namespace: str) -> Defaulting:
    """Kueue's Configuration fields the webhooks follow; the agent's kinds without one."""
    if configuration is None:
        return Defaulting(
            frameworks=AGENT_FRAMEWORKS,
            managed_jobs_namespace_selector=None,
            excluded_namespaces=frozenset({"kube-system", own_namespace}),
        )
    selector = configuration.managed_jobs_namespace_selector
    kinds = job_kinds(configuration)
    # A declared kind is enabled by its declaration.
    declared = frozenset(kind.framework for kind in kinds.declared)
    return Defaulting(
        kinds=kinds,
        frameworks=frameworks_of(configuration.integrations.frameworks) | declared,
        manage_jobs_without_queue_name=configuration.manage_jobs_without_queue_name,
        managed_jobs_namespace_selector=(
            selector.model_dump(by_alias=True, exclude_none=True) if selector else None
        ),
        local_queue_defaulting=configuration.feature_enabled("LocalQueueDefaulting", True),
        excluded_namespaces=frozenset({"kube-system", own_namespace}),
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class SecretCertStore:
    """kueue_api.webhooks.server.CertStore in a Secret, published into the configurations."""

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        configurations: Sequence[JsonObject] | None,
        configuration_names: tuple[str, str] = (MUTATING_NAME, VALIDATING_NAME),
    ) -> None:
        self._client = client
        self._namespace = namespace
        # Given: the agent writes these (URL mode); None: deploy/ installed them.
        self._configurations = configurations
        self._names = configuration_names

    async def load(self) -> Certificates | None:
        try:
            secret = await self._client.get(SECRETS, SECRET_NAME, self._namespace)
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        return Certificates.from_secret(secret.get("data"))

    async def save(self, certificates: Certificates) -> Certificates:
        body = certificates.secret(SECRET_NAME, self._namespace)
        try:
            current = await self._client.get(SECRETS, SECRET_NAME, self._namespace)
        except ApiError as error:
            if error.status != 404:
                raise
            try:
                await self._client.create(SECRETS, body)
            except ApiError as created:
                if created.status != 409:
                    raise
                return await self._theirs(certificates)
            return certificates
        body["metadata"]["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
        try:
            await self._client.replace(SECRETS, body)
        except ApiError as error:
            if error.status != 409:
                raise
            return await self._theirs(certificates)
        return certificates

    async def _theirs(self, mine: Certificates) -> Certificates:
        """Another replica stored first: serve with its certificates."""
        return await self.load() or mine

    async def publish(self, bundle: bytes) -> None:
        encoded = _b64(bundle)
        if self._configurations is not None:
            mutating, validating = self._configurations
            await self._write(MUTATING, mutating, encoded)
            await self._write(VALIDATING, validating, encoded)
            return
        await self._refresh(MUTATING, self._names[0], encoded)
        await self._refresh(VALIDATING, self._names[1], encoded)

    async def _refresh(self, rt: ResourceType, name: str, bundle: str) -> None:
        """The caBundle of a configuration deploy/ installed."""
        try:
            current = await self._client.get(rt, name)
        except ApiError as error:
            if error.status == 404:
                log.warning("webhook configuration %s is not installed (deploy/)", name)
                return
            raise
        await self._write(rt, current, bundle)

    async def _write(self, rt: ResourceType, wanted: JsonObject, bundle: str) -> None:
        name = wanted["metadata"]["name"]
        body = {**wanted, "webhooks": [dict(w) for w in wanted.get("webhooks") or []]}
        for webhook in body["webhooks"]:
            webhook["clientConfig"] = {**webhook.get("clientConfig", {}), "caBundle": bundle}
        try:
            current = await self._client.get(rt, name)
        except ApiError as error:
            if error.status != 404:
                raise
            await self._client.create(rt, body)
            return
        if current.get("webhooks") == body["webhooks"]:
            return
        body["metadata"] = {
            **body["metadata"],
            "resourceVersion": (current.get("metadata") or {}).get("resourceVersion"),
        }
        await self._client.replace(rt, body)


def agent_webhook_server(
    config: WebhookConfig,
    client: KubeClient,
    informers: InformerSet,
    configuration: Configuration | None,
) -> WebhookServer:
    namespace = config.namespace
    defaulting = defaulting_for(configuration, namespace)
    service_names = [
        config.service,
        f"{config.service}.{namespace}",
        f"{config.service}.{namespace}.svc",
        f"{config.service}.{namespace}.svc.cluster.local",
    ]
    written = (
        webhook_configurations(
            namespace,
            url=config.url,
            frameworks=sorted(defaulting.frameworks),
            declared=defaulting.kinds.declared,
        )
        if config.url is not None
        else None
    )
    return WebhookServer(
        admission_handlers(InformerView(informers), defaulting),
        SecretCertStore(client, namespace, written),
        host=config.host,
        port=config.port,
        names=[*service_names, *config.extra_names],
    )
