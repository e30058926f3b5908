"""The manager cluster's admission webhook: a Job (or JobSet) whose LocalQueue's ClusterQueue
uses MultiKueue gets `spec.managedBy: kueue.x-k8s.io/multikueue` and `suspend: true` when it is
created, as Kueue's webhook gives it on a MultiKueue manager, so the manager cluster's own Job
controller never starts a pod for it. Decisions are kueue_api.webhooks'; the view of the
cluster is the manager-cluster source's caches; the certificates live in a Secret of the
manager's namespace, their CA in the configurations.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kueue_api.jobs import KINDS, JobKind, JobKinds
from kueue_api.webhooks.configurations import webhook_configurations
from kueue_api.webhooks.mutation import Defaulting
from kueue_api.webhooks.server import Certificates, WebhookServer, admission_handlers
from manager.remote.connection import ClusterConnection

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
SECRET_NAME = "mkq-manager-webhook-cert"


class ConnectionView:
    """kueue_api.webhooks.mutation.ClusterView over the manager cluster's caches."""

    def __init__(self, connection: ClusterConnection) -> None:
        self._caches = connection.caches

    def local_queue(self, namespace: str, name: str) -> JsonObject | None:
        return self._caches["localqueues"].get((namespace, name))

    def cluster_queue(self, name: str) -> JsonObject | None:
        return self._caches["clusterqueues"].get(("", name))

    def admission_check(self, name: str) -> JsonObject | None:
        return self._caches["admissionchecks"].get(("", name))

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return None

    def workload(self, namespace: str, name: str) -> JsonObject | None:
        """The manager's webhooks cover no kind whose checks read a Workload."""
        return None


def _body(response: Any) -> JsonObject:
    return dict(response) if isinstance(response, dict) else {}


class ConnectionCertStore:
    """kueue_api.webhooks.server.CertStore through the manager cluster's connection."""

    def __init__(
        self, connection: ClusterConnection, kinds: JobKinds[JobKind], namespace: str, url: str
    ) -> None:
        self._connection = connection
        self._namespace = namespace
        self._configurations = webhook_configurations(
            namespace,
            url=url,
            frameworks=[kind.framework for kind in KINDS],
            owner="mkq-manager",
            declared=kinds.declared,
        )

    async def _api(self) -> client.ApiClient:
        api = self._connection.api_client
        if api is None:
            raise RuntimeError("the manager cluster is not connected yet")
        return api

    async def load(self) -> Certificates | None:
        core = client.CoreV1Api(await self._api())
        try:
            secret = await core.read_namespaced_secret(SECRET_NAME, self._namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return Certificates.from_secret(secret.data)

    async def save(self, certificates: Certificates) -> Certificates:
        core = client.CoreV1Api(await self._api())
        body = certificates.secret(SECRET_NAME, self._namespace)
        try:
            current = await core.read_namespaced_secret(SECRET_NAME, self._namespace)
        except ApiException as error:
            if error.status == 404:
                raise RuntimeError(
                    f"the Secret {self._namespace}/{SECRET_NAME} is missing: apply "
                    "deploy/base/manager/secrets.yaml (it ships empty; the manager fills it)"
                ) from error
            raise
        # deploy/ ships the Secret empty: the manager updates it (RBAC grants no create).
        body["metadata"]["resourceVersion"] = current.metadata.resource_version
        try:
            await core.replace_namespaced_secret(SECRET_NAME, self._namespace, body)
        except ApiException as replaced:
            if replaced.status != 409:
                raise
            return await self.load() or certificates
        return certificates

    async def publish(self, bundle: bytes) -> None:
        api = client.AdmissionregistrationV1Api(await self._api())
        encoded = base64.b64encode(bundle).decode()
        for wanted in self._configurations:
            body = {**wanted, "webhooks": [dict(w) for w in wanted["webhooks"]]}
            for webhook in body["webhooks"]:
                webhook["clientConfig"] = {**webhook["clientConfig"], "caBundle": encoded}
            name = body["metadata"]["name"]
            mutating = body["kind"] == "MutatingWebhookConfiguration"
            try:
                if mutating:
                    await api.create_mutating_webhook_configuration(body)
                else:
                    await api.create_validating_webhook_configuration(body)
            except ApiException as error:
                if error.status != 409:
                    raise
                if mutating:
                    await api.patch_mutating_webhook_configuration(name, body)
                else:
                    await api.patch_validating_webhook_configuration(name, body)


def manager_webhook_server(
    connection: ClusterConnection,
    kinds: JobKinds[JobKind],
    namespace: str,
    *,
    host: str,
    port: int,
    url: str,
) -> WebhookServer:
    """The manager cluster's webhooks, reached by kube-apiserver at `url`."""
    view = ConnectionView(connection)
    defaulting = Defaulting(
        kinds=kinds,
        frameworks=kinds.frameworks,
        multikueue=True,
        excluded_namespaces=frozenset({"kube-system", namespace}),
    )

    return WebhookServer(
        admission_handlers(view, defaulting),
        ConnectionCertStore(connection, kinds, namespace, url),
        host=host,
        port=port,
        names=["127.0.0.1", "localhost"],
    )
