"""Access reviews and whoami: kubesim has no RBAC, so every bearer token may do everything and
is reported as one admin user (kubectl auth can-i, kubectl auth whoami)."""

from __future__ import annotations

from typing import Any

from kueue_api.api_errors import bad_request

from .resources import ResourceType

Obj = dict[str, Any]
USER = {"username": "kubesim-admin", "groups": ["system:masters", "system:authenticated"]}


def review_answer(resource_type: ResourceType, body: Any, user: Obj | None = None) -> Obj:
    """The answer to an access review or whoami; `user` is the caller when it is not the
    admin token (a ServiceAccount token kubesim issued)."""
    if not isinstance(body, dict):
        raise bad_request(f"a {resource_type.kind} body is required")
    answer: Obj = {
        "kind": resource_type.kind,
        "apiVersion": f"{resource_type.group}/v1",
        "metadata": {"creationTimestamp": None},
        "spec": body.get("spec") or {},
    }
    if resource_type.kind == "SelfSubjectAccessReview":
        answer["status"] = {"allowed": True, "reason": "kubesim grants every token everything"}
    elif resource_type.kind == "SelfSubjectRulesReview":
        everything = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
        answer["status"] = {
            "resourceRules": [everything],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    else:
        answer.pop("spec")
        answer["status"] = {"userInfo": user or USER}
    return answer
