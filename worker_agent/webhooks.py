"""The agent's admission webhooks: Kueue's defaulting and validation (kueue_api.webhooks) with
the agent's informer caches as the view of the cluster, certificates kept in a Secret of the
agent's namespace, and their CA written into the webhook configurations.

Every replica serves (not only the leader): kube-apiserver may call any pod behind the
Service, and the informers that answer run on all of them. The same server answers Kueue's
visibility API (worker_agent.visibility) for kube-apiserver's aggregator, through an APIService
whose caBundle the agent fills as it fills the configurations'.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kueue_api.jobs import KINDS, POD_PARENT_KINDS, job_kinds
from kueue_api.jobs import pod as pods
from kueue_api.models.config import Configuration
from kueue_api.webhooks.configurations import (
    MUTATING_NAME,
    VALIDATING_NAME,
    VISIBILITY_API_SERVICE,
    external_service,
    visibility_api_service,
    webhook_configurations,
)
from kueue_api.webhooks.mutation import Defaulting, frameworks_of
from kueue_api.webhooks.server import (
    Certificates,
    FrontProxy,
    WebhookServer,
    admission_handlers,
)
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
from worker_agent.visibility import PREFIX as VISIBILITY_PREFIX
from worker_agent.visibility import VisibilityApi

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
CONFIG_MAPS = ResourceType("", "v1", "configmaps", "ConfigMap", True)
SERVICES = ResourceType("", "v1", "services", "Service", True)
API_SERVICES = ResourceType("apiregistration.k8s.io", "v1", "apiservices", "APIService", False)
SECRET_NAME = "mkq-agent-webhook-cert"
# Where kube-apiserver publishes its front proxy's CA and names (readable with the Role
# extension-apiserver-authentication-reader, which deploy/ binds to the agent).
AUTHENTICATION_CONFIG_MAP = ("kube-system", "extension-apiserver-authentication")
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
    # Out of cluster: also register the visibility API (an APIService and a Service naming the
    # URL's host), which deploy/ installs in-cluster. Off unless asked: once this agent is gone,
    # an APIService naming it leaves kube-apiserver's discovery incomplete, and namespace
    # deletion waits for it.
    register_visibility: bool = False


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
        topology_aware_scheduling=configuration.feature_enabled("TopologyAwareScheduling", True),
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
        api_service: tuple[JsonObject, JsonObject] | None = None,
    ) -> None:
        self._client = client
        self._namespace = namespace
        # Given: the agent writes these (URL mode); None: deploy/ installed them.
        self._configurations = configurations
        self._names = configuration_names
        # Given: the visibility APIService and the Service it names, written by the agent (URL
        # mode); None: the APIService deploy/ installed, if it is there.
        self._api_service = api_service

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
        else:
            await self._refresh(MUTATING, self._names[0], encoded)
            await self._refresh(VALIDATING, self._names[1], encoded)
        await self._publish_api_service(encoded)

    async def _publish_api_service(self, bundle: str) -> None:
        """The visibility APIService's caBundle (and, in URL mode, the APIService and its
        Service written). A server without APIServices (404) or an agent not allowed to
        touch it (403) goes without the visibility API, and the webhooks still serve."""
        try:
            if self._api_service is not None:
                api_service, service = self._api_service
                await self._put(SERVICES, service)
                wanted = {**api_service, "spec": {**api_service["spec"], "caBundle": bundle}}
            else:
                current = await self._client.get(API_SERVICES, VISIBILITY_API_SERVICE)
                wanted = {**current, "spec": {**current["spec"], "caBundle": bundle}}
            await self._put(API_SERVICES, wanted)
        except ApiError as error:
            if error.status not in (403, 404):
                raise
            log.warning(
                "visibility API: APIService %s not written (%s); "
                "deploy/base/agent/visibility.yaml installs it",
                VISIBILITY_API_SERVICE,
                error,
            )

    async def _put(self, rt: ResourceType, wanted: JsonObject) -> None:
        """Create `wanted`, or replace its spec where it differs."""
        meta = wanted["metadata"]
        try:
            current = await self._client.get(rt, meta["name"], meta.get("namespace"))
        except ApiError as error:
            if error.status != 404:
                raise
            await self._client.create(rt, wanted)
            return
        if all(current.get("spec", {}).get(k) == v for k, v in wanted["spec"].items()):
            return
        body = {
            **current,
            "spec": {**current.get("spec", {}), **wanted["spec"]},
        }
        await self._client.replace(rt, body)

    async def front_proxy(self) -> FrontProxy | None:
        """kube-apiserver's front proxy, from the ConfigMap it publishes; None when it has none
        (no --requestheader-client-ca-file) or the agent may not read it."""
        namespace, name = AUTHENTICATION_CONFIG_MAP
        try:
            config_map = await self._client.get(CONFIG_MAPS, name, namespace)
        except ApiError as error:
            if error.status in (403, 404):
                return None
            raise
        data = config_map.get("data") or {}
        ca = data.get("requestheader-client-ca-file")
        if not ca:
            return None
        try:
            names = json.loads(data.get("requestheader-allowed-names") or "[]")
        except ValueError:
            names = []
        return FrontProxy(ca.encode(), frozenset(str(n) for n in names or []))

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
    api_service = None
    if config.url is not None and config.register_visibility:
        address = urlsplit(config.url)
        service = (namespace, config.service)
        api_service = (
            visibility_api_service(service, port=address.port or 443),
            external_service(service, address.hostname or "localhost"),
        )
    store = SecretCertStore(client, namespace, written, api_service=api_service)
    return WebhookServer(
        admission_handlers(InformerView(informers), defaulting),
        store,
        host=config.host,
        port=config.port,
        names=[*service_names, *config.extra_names],
        apis={VISIBILITY_PREFIX: VisibilityApi(informers, configuration)},
        front_proxy=store.front_proxy,
    )
