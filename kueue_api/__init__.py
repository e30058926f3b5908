"""Typed models of Kueue's v1beta2 API and the core Kubernetes objects the project reads.

- Every kind is importable from here by its Kind name (``from kueue_api import ClusterQueue``).
  Python attributes are snake_case; the Kubernetes camelCase names are the aliases, so
  ``obj.model_dump(by_alias=True, exclude_none=True)`` is Kubernetes JSON and
  ``Model.model_validate(manifest)`` reads one. Defaults are filled as Kueue's CRDs and
  Kubernetes fill them.
- ``kueue_api.quantity.Quantity`` holds resource amounts exactly (whole nanos, no floats).
- ``kueue_api.loader``: ``load_documents(paths)`` / ``load_text(text)`` for multi-document YAML,
  ``parse_object(dict)`` for one object (``ValidationFailure`` lists every field error),
  ``to_manifest`` / ``to_yaml`` to write objects back.
- ``kueue_api.crd_validation``: the CRDs' own CEL rules (``rule_errors``), evaluated from the
  CRDs in ``deploy/crds/``; ``kueue_api.validation``: the rules Kueue's webhooks add
  (``validate_object``, ``validate_update``). The loader applies both.
- ``kueue_api.crds``: the CRDs in ``deploy/crds/`` (``python -m kueue_api.crds``).
"""

from kueue_api.models import *  # noqa: F403
from kueue_api.models import __all__ as _model_names
from kueue_api.quantity import Quantity, QuantityFormat

__all__ = [*_model_names, "Quantity", "QuantityFormat"]
