"""admissionregistration.k8s.io/v1 Mutating- and ValidatingWebhookConfigurations as
kube-apiserver stores them: its defaults (SetDefaults_*Webhook, _Rule, _ServiceReference) and
its validation (pkg/apis/admissionregistration/validation), with its messages.

matchConditions (CEL) are accepted and stored but not evaluated: see kubesim/README.md.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any
from urllib.parse import urlsplit

from kueue_api.api_errors import bad_request

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

GROUP = "admissionregistration.k8s.io"
MUTATING_KIND = "MutatingWebhookConfiguration"
VALIDATING_KIND = "ValidatingWebhookConfiguration"
MUTATING_KEY = f"{GROUP}/mutatingwebhookconfigurations"
VALIDATING_KEY = f"{GROUP}/validatingwebhookconfigurations"
KEYS = frozenset({MUTATING_KEY, VALIDATING_KEY})

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_FAILURE_POLICIES = ("Fail", "Ignore")
_MATCH_POLICIES = ("Equivalent", "Exact")
_SIDE_EFFECTS = ("None", "NoneOnDryRun")  # v1 requires a webhook without side effects
_REINVOCATION = ("IfNeeded", "Never")
_REVIEW_VERSIONS = ("v1", "v1beta1")
_SELECTOR_OPERATORS = ("DoesNotExist", "Exists", "In", "NotIn")


def is_mutating(obj: Obj) -> bool:
    return obj.get("kind") == MUTATING_KIND


# ---- defaults ------------------------------------------------------------------------------


def set_defaults(obj: Obj) -> None:
    """What kube-apiserver's decoding defaults on every write of a configuration."""
    mutating = is_mutating(obj)
    for hook in obj.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        service = (hook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)


# ---- validation ----------------------------------------------------------------------------


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{value}"' for value in values)


def _value(value: Any) -> str:
    """A bad value as field.Error prints it: strings quoted, numbers bare, the rest JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def _invalid(value: Any, detail: str) -> str:
    return f"Invalid value: {_value(value)}: {detail}"


def _unsupported(value: Any, supported: tuple[str, ...]) -> str:
    return f"Unsupported value: {_value(value)}: supported values: {_quoted(supported)}"


def _has_wildcard(items: list[Any]) -> bool:
    return "*" in items


def _validate_resources(resources: Any, path: str) -> Causes:
    if not isinstance(resources, list) or not resources:
        return [(path, "Required value")]
    causes: Causes = []
    wildcard_subresources: set[str] = set()  # x/*
    wildcard_resources: set[str] = set()  # */x
    without_subresource = False
    for index, entry in enumerate(resources):
        if entry == "":
            causes.append((f"{path}[{index}]", "Required value"))
            continue
        resource, slash, sub = str(entry).partition("/")
        if not slash:
            without_subresource = entry != "*"
            continue
        if resource in wildcard_subresources:
            detail = f"if '{resource}/*' is present, must not specify {entry}"
            causes.append((f"{path}[{index}]", _invalid(entry, detail)))
        if sub in wildcard_resources:
            detail = f"if '*/{sub}' is present, must not specify {entry}"
            causes.append((f"{path}[{index}]", _invalid(entry, detail)))
        if sub == "*":
            wildcard_subresources.add(resource)
        if resource == "*":
            wildcard_resources.add(sub)
    if len(resources) > 1 and "*/*" in resources:
        detail = "if '*/*' is present, must not specify other resources"
        causes.append((path, _invalid(resources, detail)))
    if "*" in resources and without_subresource:
        detail = "if '*' is present, must not specify other resources without subresources"
        causes.append((path, _invalid(resources, detail)))
    return causes


def _validate_rule(rule: Any, path: str) -> Causes:
    if not isinstance(rule, dict):
        return [(path, "Invalid value: must be an object")]
    causes: Causes = []
    operations = rule.get("operations") or []
    if not operations:
        causes.append((f"{path}.operations", "Required value"))
    if len(operations) > 1 and _has_wildcard(operations):
        detail = "if '*' is present, must not specify other operations"
        causes.append((f"{path}.operations", _invalid(operations, detail)))
    for index, operation in enumerate(operations):
        if operation not in _OPERATIONS:
            causes.append((f"{path}.operations[{index}]", _unsupported(operation, _OPERATIONS)))
    groups = rule.get("apiGroups") or []
    if not groups:
        causes.append((f"{path}.apiGroups", "Required value"))
    if len(groups) > 1 and _has_wildcard(groups):
        detail = "if '*' is present, must not specify other API groups"
        causes.append((f"{path}.apiGroups", _invalid(groups, detail)))
    versions = rule.get("apiVersions") or []
    if not versions:
        causes.append((f"{path}.apiVersions", "Required value"))
    if len(versions) > 1 and _has_wildcard(versions):
        detail = "if '*' is present, must not specify other API versions"
        causes.append((f"{path}.apiVersions", _invalid(versions, detail)))
    for index, version in enumerate(versions):
        if version == "":
            causes.append((f"{path}.apiVersions[{index}]", "Required value"))
    causes += _validate_resources(rule.get("resources"), f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        causes.append((f"{path}.scope", _unsupported(scope, _SCOPES)))
    return causes


def _validate_selector(selector: Any, path: str) -> Causes:
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [(path, "Invalid value: must be an object")]
    causes: Causes = []
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        where = f"{path}.matchExpressions[{index}]"
        operator = (expression or {}).get("operator")
        values = (expression or {}).get("values") or []
        if operator in ("In", "NotIn") and not values:
            detail = "must be specified when `operator` is 'In' or 'NotIn'"
            causes.append((f"{where}.values", f"Required value: {detail}"))
        elif operator in ("Exists", "DoesNotExist") and values:
            detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            causes.append((f"{where}.values", f"Forbidden: {detail}"))
        elif operator not in _SELECTOR_OPERATORS:
            causes.append(
                (f"{where}.operator", f"{_invalid(operator, 'not a valid selector operator')}")
            )
    return causes


def _validate_url(url: Any, path: str) -> Causes:
    form = "; desired format: https://host[/path]"
    try:
        parts = urlsplit(str(url))
    except ValueError as error:
        return [(path, f"Required value: url must be a valid URL: {error}{form}")]
    causes: Causes = []
    if parts.scheme != "https":
        causes.append(
            (path, _invalid(parts.scheme, "'https' is the only allowed URL scheme" + form))
        )
    if not parts.netloc:
        causes.append((path, _invalid(parts.netloc, "host must be specified" + form)))
    if parts.username is not None:
        detail = "user information is not permitted in the URL"
        causes.append((path, _invalid(parts.netloc.rpartition("@")[0], detail)))
    if parts.fragment:
        causes.append((path, _invalid(parts.fragment, "fragments are not permitted in the URL")))
    if parts.query:
        detail = "query parameters are not permitted in the URL"
        causes.append((path, _invalid(parts.query, detail)))
    return causes


def _validate_service(service: Obj, path: str) -> Causes:
    causes: Causes = []
    if not service.get("name"):
        causes.append((f"{path}.name", "Required value"))
    if not service.get("namespace"):
        causes.append((f"{path}.namespace", "Required value"))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        detail = "port is not valid: must be between 1 and 65535, inclusive"
        causes.append((f"{path}.port", _invalid(port, detail)))
    service_path = service.get("path")
    if service_path not in (None, "", "/") and not str(service_path).startswith("/"):
        causes.append((f"{path}.path", _invalid(service_path, "must start with a '/'")))
    return causes


def _validate_client_config(config: Any, path: str) -> Causes:
    config = config if isinstance(config, dict) else {}
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [(path, "Required value: exactly one of url or service is required")]
    ca_bundle = config.get("caBundle")
    if ca_bundle is not None:
        try:
            base64.b64decode(str(ca_bundle), validate=True)
        except (binascii.Error, ValueError) as error:
            raise bad_request(f"caBundle is not valid base64: {error}") from error
    if url is not None:
        return _validate_url(url, f"{path}.url")
    return _validate_service(service if isinstance(service, dict) else {}, f"{path}.service")


def _validate_review_versions(versions: Any, path: str) -> Causes:
    if not isinstance(versions, list) or not versions:
        return [(path, f"Required value: must specify one of {', '.join(_REVIEW_VERSIONS)}")]
    causes: Causes = []
    seen: set[str] = set()
    for index, version in enumerate(versions):
        if version in seen:
            causes.append((f"{path}[{index}]", _invalid(version, "duplicate version")))
            continue
        seen.add(version)
        if not _DNS1035.match(str(version)):
            detail = (
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character"
            )
            causes.append((f"{path}[{index}]", _invalid(version, detail)))
    if not seen & set(_REVIEW_VERSIONS):
        detail = f"must include at least one of {', '.join(_REVIEW_VERSIONS)}"
        causes.append((path, _invalid(versions, detail)))
    return causes


def _validate_name(name: Any, path: str) -> Causes:
    if not name:
        return [(path, "Required value")]
    text = str(name)
    if len(text) > 253 or not _SUBDOMAIN.match(text):
        detail = (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
        return [(path, _invalid(text, detail))]
    if len(text.split(".")) < 3:
        return [
            (
                path,
                _invalid(text, "should be a domain with at least three segments separated by dots"),
            )
        ]
    return []


def _validate_webhook(hook: Any, path: str, mutating: bool) -> Causes:
    if not isinstance(hook, dict):
        return [(path, "Invalid value: must be an object")]
    causes = _validate_name(hook.get("name"), f"{path}.name")
    for index, rule in enumerate(hook.get("rules") or []):
        causes += _validate_rule(rule, f"{path}.rules[{index}]")
    for field, supported in (
        ("failurePolicy", _FAILURE_POLICIES),
        ("matchPolicy", _MATCH_POLICIES),
    ):
        value = hook.get(field)
        if value is not None and value not in supported:
            causes.append((f"{path}.{field}", _unsupported(value, supported)))
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        detail = f"must specify one of {', '.join(_SIDE_EFFECTS)}"
        causes.append((f"{path}.sideEffects", f"Required value: {detail}"))
    elif side_effects not in _SIDE_EFFECTS:
        causes.append((f"{path}.sideEffects", _unsupported(side_effects, _SIDE_EFFECTS)))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and (not isinstance(timeout, int) or not 1 <= timeout <= 30):
        detail = "the timeout value must be between 1 and 30 seconds"
        causes.append((f"{path}.timeoutSeconds", _invalid(timeout, detail)))
    for field in ("namespaceSelector", "objectSelector"):
        causes += _validate_selector(hook.get(field), f"{path}.{field}")
    reinvocation = hook.get("reinvocationPolicy")
    if mutating and reinvocation is not None and reinvocation not in _REINVOCATION:
        causes.append((f"{path}.reinvocationPolicy", _unsupported(reinvocation, _REINVOCATION)))
    causes += _validate_client_config(hook.get("clientConfig"), f"{path}.clientConfig")
    return causes


def validate(obj: Obj) -> Causes:
    """The causes kube-apiserver refuses a configuration for (422 Invalid)."""
    mutating = is_mutating(obj)
    causes: Causes = []
    names: set[str] = set()
    webhooks = obj.get("webhooks") or []
    if not isinstance(webhooks, list):
        return [("webhooks", "Invalid value: must be a list")]
    for index, hook in enumerate(webhooks):
        path = f"webhooks[{index}]"
        causes += _validate_webhook(hook, path, mutating)
        if isinstance(hook, dict):
            causes += _validate_review_versions(
                hook.get("admissionReviewVersions"), f"{path}.admissionReviewVersions"
            )
            name = hook.get("name")
            if name and name in names:
                causes.append((f"{path}.name", f"Duplicate value: {_value(name)}"))
            elif name:
                names.add(str(name))
    return causes
