"""Load multi-document YAML into models, dispatching on apiVersion and kind.

Errors read ``FILE: document N (Kind/name): field.path: what is wrong``; N counts the YAML
documents of the file from 1. Documents whose kind we do not model are reported as
``unsupported kind`` errors, flagged so a caller may choose to skip them.

An object is checked as a cluster running Kueue would check it on a create: its shape (the
models, standing for the CRD's OpenAPI schema), the CRD's CEL rules (kueue_api.crd_validation,
in kube-apiserver's words) and the rules Kueue's webhooks add (kueue_api.validation). Every
error of all three is reported in one pass.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from kueue_api import models
from kueue_api.crd_validation import rule_errors
from kueue_api.documents import DocumentError, load_yaml_all
from kueue_api.errors import FieldError, ValidationFailure, format_path, from_pydantic
from kueue_api.models.apps import Deployment, StatefulSet
from kueue_api.models.kubeflow import KUBEFLOW_MODELS
from kueue_api.models.leaderworkerset import LeaderWorkerSet
from kueue_api.models.ray import RayCluster, RayJob, RayService
from kueue_api.validation import validate_object

__all__ = [
    "KINDS",
    "ConfigurationFileError",
    "LoadError",
    "LoadResult",
    "LoadedObject",
    "ValidationFailure",
    "load_configuration",
    "load_documents",
    "load_text",
    "model_for",
    "parse_object",
    "parse_object_with_warnings",
    "to_manifest",
    "to_yaml",
]

_KUEUE = "kueue.x-k8s.io/v1beta2"

# (apiVersion, kind) -> model.
KINDS: dict[tuple[str, str], type[BaseModel]] = {
    (_KUEUE, "ResourceFlavor"): models.ResourceFlavor,
    (_KUEUE, "ClusterQueue"): models.ClusterQueue,
    (_KUEUE, "Cohort"): models.Cohort,
    (_KUEUE, "LocalQueue"): models.LocalQueue,
    (_KUEUE, "Workload"): models.Workload,
    (_KUEUE, "WorkloadPriorityClass"): models.WorkloadPriorityClass,
    (_KUEUE, "AdmissionCheck"): models.AdmissionCheck,
    (_KUEUE, "MultiKueueConfig"): models.MultiKueueConfig,
    (_KUEUE, "MultiKueueCluster"): models.MultiKueueCluster,
    (_KUEUE, "Topology"): models.Topology,
    (_KUEUE, "ProvisioningRequestConfig"): models.ProvisioningRequestConfig,
    ("config.kueue.x-k8s.io/v1beta2", "Configuration"): models.Configuration,
    ("v1", "Namespace"): models.Namespace,
    ("v1", "Node"): models.Node,
    ("v1", "Pod"): models.Pod,
    ("batch/v1", "Job"): models.Job,
    ("batch/v1", "CronJob"): models.CronJob,
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): models.JobSet,
    **{
        (model.model_fields["api_version"].default, kind): model
        for kind, (model, _) in KUBEFLOW_MODELS.items()
    },
    ("ray.io/v1", "RayJob"): RayJob,
    ("ray.io/v1", "RayCluster"): RayCluster,
    ("ray.io/v1", "RayService"): RayService,
    ("apps/v1", "Deployment"): Deployment,
    ("apps/v1", "StatefulSet"): StatefulSet,
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): LeaderWorkerSet,
    ("resource.k8s.io/v1", "DeviceClass"): models.DeviceClass,
    ("resource.k8s.io/v1", "ResourceClaim"): models.ResourceClaim,
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): models.ResourceClaimTemplate,
    ("resource.k8s.io/v1", "ResourceSlice"): models.ResourceSlice,
}
_VERSIONS_BY_KIND: dict[str, list[str]] = {}
for _version, _kind in KINDS:
    _VERSIONS_BY_KIND.setdefault(_kind, []).append(_version)


@dataclass(frozen=True)
class LoadedObject:
    file: str
    index: int
    obj: BaseModel


@dataclass(frozen=True)
class LoadError:
    """One problem with one document; ``unsupported`` marks kinds we do not model."""

    file: str
    index: int | None
    kind: str | None
    name: str | None
    error: FieldError
    unsupported: bool = False

    def __str__(self) -> str:
        where = self.file
        if self.index is not None:
            where += f": document {self.index}"
            if self.kind:
                where += f" ({self.kind}/{self.name or '<unnamed>'})"
        return f"{where}: {self.error}"


@dataclass(frozen=True)
class LoadResult:
    objects: list[LoadedObject] = field(default_factory=list)
    errors: list[LoadError] = field(default_factory=list)
    # Problems that do not stop an object from loading (see FieldError.warning).
    warnings: list[LoadError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def model_for(api_version: str, kind: str) -> type[BaseModel] | None:
    return KINDS.get((api_version, kind))


def _identity(document: Mapping[str, Any]) -> tuple[str, str]:
    kind = document.get("kind")
    metadata = document.get("metadata")
    name = ""
    if isinstance(metadata, Mapping):
        raw = metadata.get("name") or (
            f"{metadata['generateName']}*" if metadata.get("generateName") else ""
        )
        name = str(raw)
        if metadata.get("namespace"):
            name = f"{metadata['namespace']}/{name}"
    return (kind if isinstance(kind, str) else ""), name


def parse_object(document: Mapping[str, Any]) -> BaseModel:
    """Parse and validate one object; raises :class:`ValidationFailure` with every error."""
    return parse_object_with_warnings(document)[0]


def parse_object_with_warnings(document: Mapping[str, Any]) -> tuple[BaseModel, list[FieldError]]:
    """Like :func:`parse_object`, also returning the warnings of an object that loads."""
    kind, name = _identity(document)
    api_version = document.get("apiVersion")
    if not kind:
        raise ValidationFailure(kind, name, [FieldError("kind", "Required value")])
    known = _VERSIONS_BY_KIND.get(kind)
    if not known:
        version = f" ({api_version})" if isinstance(api_version, str) and api_version else ""
        raise ValidationFailure(
            kind, name, [FieldError("kind", f"unsupported kind {kind!r}{version}")]
        )
    if not isinstance(api_version, str) or not api_version:
        raise ValidationFailure(kind, name, [FieldError("apiVersion", "Required value")])
    model = KINDS.get((api_version, kind))
    if model is None:
        message = (
            f"unsupported apiVersion {api_version!r} for {kind} (supported: {', '.join(known)})"
        )
        raise ValidationFailure(kind, name, [FieldError("apiVersion", message)])
    try:
        obj = model.model_validate(document)
    except ValidationError as error:
        errors = from_pydantic(error) + _rule_errors_besides(model, document, error)
        raise ValidationFailure(kind, name, errors) from None
    problems = [*rule_errors(document), *validate_object(obj)]
    errors = [problem for problem in problems if not problem.warning]
    if errors:
        raise ValidationFailure(kind, name, errors)
    return obj, [problem for problem in problems if problem.warning]


def _without(document: Any, locations: Iterable[tuple[Any, ...]]) -> Any:
    """A copy of `document` with the values at `locations` left out."""
    copied = copy.deepcopy(document)
    for location in locations:
        target = copied
        for part in location[:-1]:
            try:
                target = target[part]
            except (KeyError, IndexError, TypeError):
                break
        else:
            if isinstance(target, dict):
                target.pop(location[-1], None)
    return copied


def _rule_errors_besides(
    model: type[BaseModel], document: Mapping[str, Any], error: ValidationError
) -> list[FieldError]:
    """The rule errors an invalid document has besides its shape errors: the fields pydantic
    refused are left out (their defaults stand in) and the rules run on the rest, so one pass
    of `mkq validate` reports every error, not the first kind found. kube-apiserver skips the
    CRD's rules after some schema errors, and never calls a webhook on an object its schema
    refused; a file checker that did the same would make its user fix one kind of error per
    run. The CRD's rules need no model; the webhooks' rules run when the rest still reads as
    one (nothing required was among the refused)."""
    locations = [tuple(item["loc"]) for item in error.errors(include_url=False)]
    rest = _without(document, locations)
    problems = rule_errors(rest)
    with contextlib.suppress(ValidationError):
        problems += validate_object(model.model_validate(rest))
    reported = {format_path(location) for location in locations}
    return [problem for problem in problems if not problem.warning and problem.path not in reported]


def to_manifest(obj: BaseModel) -> dict[str, Any]:
    """The object as Kubernetes JSON (camelCase keys, quantities and times as strings)."""
    manifest: dict[str, Any] = obj.model_dump(mode="json", by_alias=True, exclude_none=True)
    return manifest


def to_yaml(objects: Iterable[BaseModel]) -> str:
    """A multi-document YAML stream of the objects, loadable by :func:`load_text`."""
    return yaml.safe_dump_all(
        [to_manifest(obj) for obj in objects], sort_keys=False, explicit_start=True
    )


def _unsupported(document: Mapping[str, Any]) -> bool:
    kind = document.get("kind")
    return isinstance(kind, str) and kind not in _VERSIONS_BY_KIND


def load_text(text: str, file: str = "<input>") -> LoadResult:
    """Load every document of one YAML stream."""
    result = LoadResult()
    try:
        documents = load_yaml_all(text)
    except DocumentError as error:
        result.errors.append(
            LoadError(file, error.document, None, None, FieldError(error.path or "", error.message))
        )
        return result
    for index, document in enumerate(documents, start=1):
        if document is None:
            continue
        if not isinstance(document, Mapping):
            result.errors.append(
                LoadError(
                    file,
                    index,
                    None,
                    None,
                    FieldError("", "a document must be a mapping (an object)"),
                )
            )
            continue
        kind, name = _identity(document)
        try:
            obj, warnings = parse_object_with_warnings(document)
        except ValidationFailure as failure:
            unsupported = _unsupported(document)
            result.errors.extend(
                LoadError(file, index, kind or None, name, error, unsupported)
                for error in failure.errors
            )
            continue
        result.objects.append(LoadedObject(file, index, obj))
        result.warnings.extend(LoadError(file, index, kind, name, warning) for warning in warnings)
    return result


def load_documents(paths: Iterable[str | Path]) -> LoadResult:
    """Load every document of every file, in order; unreadable files are errors too."""
    result = LoadResult()
    for path in paths:
        file = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            result.errors.append(
                LoadError(file, None, None, None, FieldError("", f"cannot read: {error}"))
            )
            continue
        partial = load_text(text, file)
        result.objects.extend(partial.objects)
        result.errors.extend(partial.errors)
        result.warnings.extend(partial.warnings)
    return result


class ConfigurationFileError(ValueError):
    """A file that is not one usable Kueue Configuration; each problem names the file, the
    document and the field, as the loader's errors do."""

    def __init__(self, path: str, problems: Iterable[str]) -> None:
        self.path = path
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def load_configuration(path: str | Path) -> models.Configuration:
    """The one config.kueue.x-k8s.io/v1beta2 Configuration `path` holds, defaulted and
    validated as Kueue does; the agent's and the manager's `--config` both read it here."""
    result = load_documents([path])
    if result.errors:
        raise ConfigurationFileError(str(path), (str(error) for error in result.errors))
    found = [item.obj for item in result.objects if isinstance(item.obj, models.Configuration)]
    if len(found) != 1 or len(result.objects) != 1:
        raise ConfigurationFileError(
            str(path), ["must hold exactly one config.kueue.x-k8s.io/v1beta2 Configuration"]
        )
    return found[0]
