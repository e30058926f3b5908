"""Which Kubernetes API calls the manager and the agent make, found by reading their code.

An RBAC rule is needed per (API group, resource, verb). The manager calls kubernetes-asyncio's
typed APIs (`BatchV1Api.create_namespaced_job`, `CustomObjectsApi.list_cluster_custom_object`
with a group and plural...); the agent calls its own generic `KubeClient` with a
`ResourceType` (`client.create(EVENTS, ...)`, `writer.update(WORKLOADS, ..., status=True)`).

The verb comes from the method's name (list_/watch -> list and watch, create_ -> create,
patch_ -> patch, replace_ -> update, delete_collection_ -> deletecollection, delete_ -> delete,
read_/get_ -> get); the group and resource from the REST path kubernetes-asyncio's generated
method requests (so no guessing of plurals), with the group and plural arguments of custom-object
calls resolved from constants, from call sites when they are parameters, and otherwise from
every Kueue plural the module names (an over-approximation: the test can only get stricter).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client as k8s_client

from kueue_api.jobs import BUILT_IN, KINDS, dispatching

ROOT = Path(__file__).resolve().parents[3]

KUEUE_GROUP = "kueue.x-k8s.io"


@dataclass(frozen=True, order=True)
class ApiCall:
    """One permission a call needs: `resource` may carry a subresource (`pods/log`)."""

    group: str
    resource: str
    verb: str
    where: str = ""
    namespace: str | None = None

    @property
    def permission(self) -> tuple[str, str, str]:
        return self.group, self.resource, self.verb

    def __str__(self) -> str:
        group = self.group or "core"
        return f"{self.verb} {self.resource} ({group}) at {self.where}"


# ---- verbs from method names -----------------------------------------------------------------

_VERB_PREFIXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("list_", ("list", "watch")),
    ("watch_", ("list", "watch")),
    ("create_", ("create",)),
    ("patch_", ("patch",)),
    ("replace_", ("update",)),
    ("delete_collection_", ("deletecollection",)),
    ("delete_", ("delete",)),
    ("read_", ("get",)),
    ("get_", ("get",)),
)


def verbs_of(method: str) -> tuple[str, ...]:
    """The RBAC verbs a kubernetes-asyncio method name needs; () for non-API methods."""
    for prefix, verbs in _VERB_PREFIXES:
        if method.startswith(prefix):
            return verbs
    return ()


# ---- kubernetes-asyncio's typed APIs ---------------------------------------------------------


@dataclass(frozen=True)
class _Endpoint:
    api_class: str
    path: str  # e.g. /apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}/status
    parameters: tuple[str, ...]  # the method's positional parameters, self excluded


@cache
def _api_classes() -> tuple[type[Any], ...]:
    return tuple(
        value
        for name, value in vars(k8s_client).items()
        if name.endswith("Api") and inspect.isclass(value) and name != "ApiClient"
    )


@cache
def endpoints_of(method: str) -> tuple[_Endpoint, ...]:
    """The REST path(s) a typed API method requests, over every class that has it."""
    if not verbs_of(method):
        return ()
    found: list[_Endpoint] = []
    for api_class in _api_classes():
        function = getattr(api_class, method, None)
        detail = getattr(api_class, f"{method}_with_http_info", None)
        if function is None or detail is None:
            continue
        paths = re.findall(r"'(/apis?/[^']*)'", inspect.getsource(detail))
        if not paths:
            continue
        parameters = tuple(
            p.name
            for p in inspect.signature(function).parameters.values()
            if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "self"
        )
        found.append(_Endpoint(api_class.__name__, paths[0], parameters))
    return tuple(found)


def split_path(path: str) -> tuple[str, str, str | None]:
    """(group, resource[/subresource], namespace) of a REST path, templated or concrete."""
    parts = [p for p in path.split("/") if p]
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    if len(rest) >= 3:
        resource = f"{rest[0]}/{rest[2]}"
    return group, resource, namespace


# ---- resolving argument values ---------------------------------------------------------------


@cache
def kueue_plurals() -> frozenset[str]:
    from kueue_api.crds import CRD_SPECS, crd_manifest

    return frozenset(crd_manifest(spec)["spec"]["names"]["plural"] for spec in CRD_SPECS)


@dataclass
class _Module:
    path: Path
    name: str
    tree: ast.Module
    parents: dict[ast.AST, ast.AST]

    @property
    def globals(self) -> dict[str, Any]:
        return vars(importlib.import_module(self.name))

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                return node
        return None


def load_modules(package: str) -> list[_Module]:
    modules = []
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        parents = {
            child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
        }
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        modules.append(_Module(path, name.removesuffix(".__init__"), tree, parents))
    return modules


class Resolver:
    """Possible values of an expression: constants, module globals, parameters via callers."""

    def __init__(self, modules: list[_Module]) -> None:
        self.modules = modules

    def values(self, module: _Module, node: ast.AST, depth: int = 0) -> set[Any] | None:
        """The values `node` may take, or None when that cannot be told."""
        if isinstance(node, ast.Constant):
            return {node.value}
        if isinstance(node, ast.IfExp):
            body = self.values(module, node.body, depth)
            orelse = self.values(module, node.orelse, depth)
            return None if body is None or orelse is None else body | orelse
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = module.globals.get(node.value.id)
            if inspect.ismodule(owner) and hasattr(owner, node.attr):
                return {getattr(owner, node.attr)}
            return None
        if not isinstance(node, ast.Name):
            return None
        function = module.enclosing_function(node)
        if function is not None:
            local = self._local(module, function, node.id, depth)
            if local is not _NOT_LOCAL:
                return local  # type: ignore[return-value]
        if node.id in module.globals:
            return {module.globals[node.id]}
        return None

    def _local(
        self,
        module: _Module,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        name: str,
        depth: int,
    ) -> set[Any] | object | None:
        for loop in ast.walk(function):
            if (
                isinstance(loop, ast.For)
                and isinstance(loop.target, ast.Name)
                and loop.target.id == name
            ):
                if isinstance(loop.iter, ast.Tuple | ast.List):
                    found: set[Any] = set()
                    for element in loop.iter.elts:
                        values = self.values(module, element, depth)
                        if values is None:
                            return None
                        found |= values
                    return found
                return None
        arguments = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        if name in arguments:
            if depth >= 4:
                return None
            return self._from_callers(function.name, arguments, name, depth + 1)
        assigned = any(
            isinstance(target, ast.Name) and target.id == name
            for statement in ast.walk(function)
            if isinstance(statement, ast.Assign)
            for target in statement.targets
        )
        return None if assigned else _NOT_LOCAL

    def _from_callers(
        self, function: str, arguments: list[str], name: str, depth: int
    ) -> set[Any] | None:
        index = arguments.index(name)
        if arguments and arguments[0] in ("self", "cls"):
            index -= 1
        found: set[Any] = set()
        callers = 0
        for module in self.modules:
            for call in ast.walk(module.tree):
                if not isinstance(call, ast.Call) or _called_name(call) != function:
                    continue
                argument = next((k.value for k in call.keywords if k.arg == name), None)
                if argument is None and 0 <= index < len(call.args):
                    argument = call.args[index]
                if _forwards(module, call, function, name, argument):
                    continue  # a wrapper's own parameter: its values are the other callers'
                callers += 1
                if argument is None:
                    continue  # the parameter's default
                values = self.values(module, argument, depth)
                if values is None:
                    return None
                found |= values
        return found if callers else None


_NOT_LOCAL = object()


def _forwards(
    module: _Module, call: ast.Call, function: str, name: str, argument: ast.AST | None
) -> bool:
    """Whether `call` is a method of the same name handing its own parameter on (a wrapper
    such as manager.priority.MemoReader.read_custom), which adds no value of its own."""
    enclosing = module.enclosing_function(call)
    return (
        enclosing is not None
        and enclosing.name == function
        and isinstance(argument, ast.Name)
        and argument.id == name
    )


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    if isinstance(call.func, ast.Name):
        return call.func.id
    return None


def _argument(call: ast.Call, parameters: tuple[str, ...], name: str) -> ast.AST | None:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    index = parameters.index(name) if name in parameters else -1
    return call.args[index] if 0 <= index < len(call.args) else None


# What the manager's calls to a worker reach: the job kinds and the pod groups it dispatches.
DISPATCHED = dispatching(BUILT_IN)


def _names_a_job_kinds_group(node: ast.AST | None) -> bool:
    """Whether `node` is `resource.group` (or `<...>.resource.group`): a JobKind's resource,
    which the job-kind layer (kueue_api.jobs) addresses for every kind alike."""
    if not isinstance(node, ast.Attribute) or node.attr != "group":
        return False
    owner = node.value
    return (isinstance(owner, ast.Name) and owner.id == "resource") or (
        isinstance(owner, ast.Attribute) and owner.attr == "resource"
    )


def _fallback_plurals(module: _Module) -> set[str]:
    """Every Kueue plural the module names, by a constant or a string literal."""
    names = {v for v in module.globals.values() if isinstance(v, str)}
    names |= {
        n.value
        for n in ast.walk(module.tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    return names & kueue_plurals()


# ---- the manager: kubernetes-asyncio typed calls ---------------------------------------------


def typed_api_calls(package: str) -> list[ApiCall]:
    """Every kubernetes-asyncio typed API call under `package`, as permissions."""
    modules = load_modules(package)
    resolver = Resolver(modules)
    calls: list[ApiCall] = []
    for module in modules:
        source = module.path.read_text()
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            method = node.func.attr
            where = f"{module.path.relative_to(ROOT)}:{node.lineno}"
            if method == "call_api":
                calls += _raw_calls(resolver, module, node, where)
                continue
            candidates = endpoints_of(method)
            if not candidates:
                continue
            named = [e for e in candidates if e.api_class in source]
            for endpoint in named or candidates:
                calls += _typed_call(resolver, module, node, method, endpoint, where)
    return calls


def _raw_calls(resolver: Resolver, module: _Module, call: ast.Call, where: str) -> list[ApiCall]:
    """ApiClient.call_api(path, method, ...): the path templates and methods it is called with
    (constants, or parameters resolved through the callers), each as the request it makes."""
    paths = resolver.values(module, call.args[0]) if call.args else None
    methods = resolver.values(module, call.args[1]) if len(call.args) > 1 else None
    assert paths and methods, f"{where}: call_api with a path or method this test cannot tell"
    found = []
    for path in paths:
        for method in methods:
            request = request_call(method, path, {})
            assert request is not None, f"{where}: {method} {path} is not an API request"
            found.append(ApiCall(request.group, request.resource, request.verb, where))
    return found


def _typed_call(
    resolver: Resolver,
    module: _Module,
    call: ast.Call,
    method: str,
    endpoint: _Endpoint,
    where: str,
) -> list[ApiCall]:
    groups: set[str] = set()
    plurals: set[str] = set()
    if "{group}" in endpoint.path and _names_a_job_kinds_group(
        _argument(call, endpoint.parameters, "group")
    ):
        # `resource.group` of a kueue_api.jobs kind: the call reaches every kind's resource;
        # the manager's calls to workers (manager/remote/) every kind it dispatches, pod
        # groups included.
        kinds = DISPATCHED if where.startswith("manager/remote/") else KINDS
        return [
            ApiCall(kind.resource.group, kind.resource.plural, verb, where)
            for kind in kinds
            for verb in verbs_of(method)
        ]
    if "{group}" in endpoint.path:
        group_node = _argument(call, endpoint.parameters, "group")
        values = resolver.values(module, group_node) if group_node is not None else None
        groups = {v for v in values or () if isinstance(v, str)} or {KUEUE_GROUP}
        plural_node = _argument(call, endpoint.parameters, "plural")
        values = resolver.values(module, plural_node) if plural_node is not None else None
        plurals = (
            {v for v in values if isinstance(v, str)}
            if values is not None
            else _fallback_plurals(module)
        )
    else:
        group, resource, _ = split_path(endpoint.path)
        groups, plurals = {group}, {resource}
    calls = []
    for group in groups:
        for plural in plurals:
            templated = endpoint.path.replace("{group}", group or "g").replace("{plural}", plural)
            resource = split_path(templated)[1] if "/" not in plural else plural
            calls += [ApiCall(group, resource, verb, where) for verb in verbs_of(method)]
    return calls


# ---- the agent: KubeClient and ObjectWriter calls on ResourceTypes ---------------------------

# KubeClient/ObjectWriter method -> the verb it needs.
_GENERIC_VERBS: dict[str, str] = {
    "list": "list",
    "watch": "watch",
    "get": "get",
    "create": "create",
    "replace": "update",
    "patch": "patch",
    "delete": "delete",
    "update": "update",  # ObjectWriter.update: get (on conflict), then replace
}

# The generic plumbing passes a caller's ResourceType through; its callers are scanned instead.
_PLUMBING = {
    "worker_agent.kube_client",
    "worker_agent.writer",
    "worker_agent.informer",
    "worker_agent.status_writes",
}


@dataclass(frozen=True)
class GenericCalls:
    calls: list[ApiCall]
    unresolved: list[str]  # call sites whose resource type only a run can tell


def generic_api_calls(package: str) -> GenericCalls:
    """Calls on the agent's KubeClient and ObjectWriter whose ResourceType is a constant."""
    from worker_agent.agent import default_admission_checks
    from worker_agent.resources import ResourceType

    modules = [m for m in load_modules(package) if ".engine" not in m.name]
    resolver = Resolver(modules)
    integration_types = {i.resource for i in KINDS}
    check_writes = {rt for c in default_admission_checks() for rt in c.writes}
    calls: list[ApiCall] = []
    unresolved: list[str] = []
    for module in modules:
        if module.name in _PLUMBING:
            continue
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            receiver = ast.unparse(node.func.value)
            method = node.func.attr
            # StatusWrites.want(rt, key, mutate) is a status update the writer makes later.
            queued_status = method == "want" and receiver.endswith("status_writes")
            if queued_status:
                method = "update"
            elif method not in _GENERIC_VERBS or not receiver.endswith(("client", "writer")):
                continue
            if not node.args:
                continue
            where = f"{module.path.relative_to(ROOT)}:{node.lineno}"
            values = resolver.values(module, node.args[0])
            if values is None and ast.unparse(node.args[0]) == "self.rt":
                # A JobController acts on its integration's type (Job, JobSet...).
                values = set(integration_types)
            if values is None and module.name == "worker_agent.admission_checks.runner":
                # A check controller's actions, on what it declares it `writes`.
                values = set(check_writes)
            if values is None:
                unresolved.append(where)
                continue
            types = [v for v in values if isinstance(v, ResourceType)]
            if not types:
                continue  # some other client (the reports' HTTP session...), not Kubernetes
            subresources: set[str | None] = (
                {"status"} if queued_status else _subresources(resolver, module, node, method)
            )
            for rt in types:
                if method == "update":  # ObjectWriter.update: read the object, replace it
                    calls.append(ApiCall(rt.group, rt.plural, "get", where))
                for sub in subresources:
                    resource = f"{rt.plural}/{sub}" if sub else rt.plural
                    verb = _GENERIC_VERBS[method]
                    calls.append(ApiCall(rt.group, resource, verb, where))
    return GenericCalls(calls, unresolved)


def _subresources(
    resolver: Resolver, module: _Module, call: ast.Call, method: str
) -> set[str | None]:
    if method == "update":
        status = next((k.value for k in call.keywords if k.arg == "status"), None)
        values = resolver.values(module, status) if status is not None else {False}
        return {"status" if v else None for v in values or {True, False}}
    if method in ("replace", "patch"):
        index = 2 if method == "replace" else 4
        node = next((k.value for k in call.keywords if k.arg == "subresource"), None)
        if node is None and len(call.args) > index:
            node = call.args[index]
        if node is None:
            return {None}
        values = resolver.values(module, node)
        return {v for v in values} if values is not None else {None, "status"}
    return {None}


def informer_calls() -> list[ApiCall]:
    """The agent lists and watches every type its InformerSet is built with."""
    from worker_agent.agent import default_admission_checks, informed_resources

    types = informed_resources(KINDS, default_admission_checks())
    return [
        ApiCall(rt.group, rt.plural, verb, "worker_agent/agent.py: InformerSet")
        for rt in types
        for verb in ("list", "watch")
    ]


# ---- recorded requests -----------------------------------------------------------------------


def _true(value: str | None) -> bool:
    """A query flag as the API server parses it (Go's strconv.ParseBool): kubernetes-asyncio
    sends `watch=True`, kubectl `watch=true`."""
    return value in ("1", "t", "T", "true", "TRUE", "True")


def request_call(method: str, path: str, query: dict[str, str]) -> ApiCall | None:
    """The permission one HTTP request to the API server needs; None for discovery paths."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    core = len(parts) >= 3 and parts[0] == "api"
    grouped = len(parts) >= 4 and parts[0] == "apis"
    if not (core or grouped):
        return None
    group, resource, namespace = split_path(path)
    rest = parts[2:] if core else parts[3:]
    if namespace is not None:
        rest = rest[2:]
    is_object = len(rest) >= 2
    verb = {
        "GET": "get" if is_object else ("watch" if _true(query.get("watch")) else "list"),
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if is_object else "deletecollection",
    }[method.upper()]
    return ApiCall(group, resource, verb, f"{method.upper()} {path}", namespace)
