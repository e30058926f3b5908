"""ServiceAccount tokens (TokenRequest, token Secrets), RBAC denials and admission webhooks."""

from __future__ import annotations

import base64

from tests.fidelity.harness import Client, Kubectl, eventually, jwt_claims, kubesim_difference

RBAC = (
    "RBAC is not enforced: every authenticated token (admin or ServiceAccount) may do everything."
)

SA_TOKEN = "kubernetes.io/service-account-token"


async def _service_account(kube: Client, namespace: str, name: str) -> dict[str, object]:
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts"
    return await kube.ok("POST", path, {"metadata": {"name": name}})


async def _whoami(client: Client) -> dict[str, object]:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    answer = await client.ok("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review)
    user: dict[str, object] = answer["status"]["userInfo"]
    return user


async def test_token_request_issues_a_jwt_for_the_service_account(
    kube: Client, namespace: str
) -> None:
    sa = await _service_account(kube, namespace, "robot")
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    answer = await kube.request(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/robot/token", body
    )
    assert answer.status == 201
    issued = answer.obj
    assert issued["kind"] == "TokenRequest"
    assert issued["apiVersion"] == "authentication.k8s.io/v1"
    assert issued["status"]["expirationTimestamp"]
    claims = jwt_claims(issued["status"]["token"])
    assert claims["sub"] == f"system:serviceaccount:{namespace}:robot"
    assert claims["kubernetes.io"]["serviceaccount"]["uid"] == sa["metadata"]["uid"]  # type: ignore[index]
    assert claims["exp"] - claims["iat"] == 3600


async def test_kubectl_create_token_authenticates_as_the_service_account(
    kube: Client, kubectl: Kubectl, namespace: str
) -> None:
    await _service_account(kube, namespace, "robot")
    token = (await kubectl.ok("-n", namespace, "create", "token", "robot")).strip()
    robot = Client.with_token(kube, token)
    try:
        user = await _whoami(robot)
    finally:
        await robot.close()
    assert user["username"] == f"system:serviceaccount:{namespace}:robot"
    assert set(user["groups"]) >= {  # type: ignore[arg-type]
        "system:serviceaccounts",
        f"system:serviceaccounts:{namespace}",
        "system:authenticated",
    }


async def test_token_request_for_a_missing_service_account_is_404(
    kube: Client, namespace: str
) -> None:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    answer = await kube.request(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/nobody/token", body
    )
    assert answer.status == 404
    assert answer.obj["message"] == 'serviceaccounts "nobody" not found'


async def test_service_account_token_secret_is_filled_by_the_token_controller(
    kube: Client, namespace: str
) -> None:
    await _service_account(kube, namespace, "robot")
    secret = {
        "metadata": {
            "name": "robot-token",
            "annotations": {"kubernetes.io/service-account.name": "robot"},
        },
        "type": SA_TOKEN,
    }
    path = f"/api/v1/namespaces/{namespace}/secrets"
    await kube.ok("POST", path, secret)

    async def filled() -> dict[str, str]:
        data: dict[str, str] = (await kube.ok("GET", f"{path}/robot-token")).get("data") or {}
        return data if {"token", "ca.crt", "namespace"} <= set(data) else {}

    data = await eventually(filled, "token, ca.crt and namespace in the Secret")
    assert base64.b64decode(data["namespace"]).decode() == namespace
    token = base64.b64decode(data["token"]).decode()
    assert jwt_claims(token)["sub"] == f"system:serviceaccount:{namespace}:robot"
    robot = Client.with_token(kube, token)
    try:
        user = await _whoami(robot)
    finally:
        await robot.close()
    assert user["username"] == f"system:serviceaccount:{namespace}:robot"


@kubesim_difference(RBAC)
async def test_rbac_denies_a_service_account_beyond_its_role(kube: Client, namespace: str) -> None:
    await _service_account(kube, namespace, "narrow")
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    role = {
        "metadata": {"name": "read-cm"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    }
    await kube.ok("POST", f"{rbac}/roles", role)
    binding = {
        "metadata": {"name": "read-cm"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-cm"},
        "subjects": [{"kind": "ServiceAccount", "name": "narrow", "namespace": namespace}],
    }
    await kube.ok("POST", f"{rbac}/rolebindings", binding)
    await kube.ok("POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "c"}})
    issued = await kube.ok(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/narrow/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    narrow = Client.with_token(kube, issued["status"]["token"])
    user = f"system:serviceaccount:{namespace}:narrow"
    try:
        allowed = await narrow.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/c")
        assert allowed.status == 200
        denied = await narrow.request("GET", f"/api/v1/namespaces/{namespace}/secrets")
        assert denied.status == 403
        assert denied.obj == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f'secrets is forbidden: User "{user}" cannot list resource "secrets" in '
            f'API group "" in the namespace "{namespace}"',
            "reason": "Forbidden",
            "details": {"kind": "secrets"},
            "code": 403,
        }
        named = await narrow.request("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/c")
        assert named.status == 403
        assert named.obj["message"] == (
            f'configmaps "c" is forbidden: User "{user}" cannot delete resource "configmaps" '
            f'in API group "" in the namespace "{namespace}"'
        )
        assert named.obj["details"] == {"name": "c", "kind": "configmaps"}
        cluster = await narrow.request("GET", "/api/v1/nodes")
        assert cluster.status == 403
        assert cluster.obj["message"] == (
            f'nodes is forbidden: User "{user}" cannot list resource "nodes" in API group "" '
            "at the cluster scope"
        )
        jobs = await narrow.request("GET", f"/apis/batch/v1/namespaces/{namespace}/jobs")
        assert jobs.obj["message"] == (
            f'jobs.batch is forbidden: User "{user}" cannot list resource "jobs" in API group '
            f'"batch" in the namespace "{namespace}"'
        )
    finally:
        await narrow.close()


async def test_unauthenticated_requests_are_401(kube: Client) -> None:
    anonymous = Client.with_token(kube, "not-a-valid-token")
    try:
        answer = await anonymous.request("GET", "/api/v1/namespaces")
    finally:
        await anonymous.close()
    assert answer.status == 401
    assert answer.obj["reason"] == "Unauthorized" and answer.obj["kind"] == "Status"


async def test_validating_webhook_with_failure_policy_fail_blocks_matching_writes(
    kube: Client, namespace: str
) -> None:
    """A webhook whose endpoint is unreachable, with failurePolicy Fail, rejects the request
    it matches (only this test's namespace, by label)."""
    await kube.ok(
        "PATCH",
        f"/api/v1/namespaces/{namespace}",
        {"metadata": {"labels": {"fidelity-webhook": namespace}}},
        content_type="application/merge-patch+json",
    )
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": f"deny-{namespace}"},
        "webhooks": [
            {
                "name": "deny.fidelity.mkq.dev",
                "clientConfig": {"url": "https://127.0.0.1:1/deny"},
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["configmaps"],
                    }
                ],
                "namespaceSelector": {"matchLabels": {"fidelity-webhook": namespace}},
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 2,
            }
        ],
    }
    webhooks = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    created = await kube.request("POST", webhooks, config)
    assert created.status == 201, created.body
    try:

        async def rejected() -> bool:
            path = f"/api/v1/namespaces/{namespace}/configmaps"
            answer = await kube.request("POST", path, {"metadata": {"generateName": "w-"}})
            return answer.status == 500 and "failed calling webhook" in answer.obj["message"]

        await eventually(rejected, "the webhook to reject the write")
    finally:
        await kube.request("DELETE", f"{webhooks}/deny-{namespace}")
