"""Typed models of Kueue's v1beta2 API and the core Kubernetes objects the project reads.

Every kind is importable from here by its Kind name (``from kueue_api import ClusterQueue``);
``kueue_api.quantity.Quantity`` holds resource amounts exactly, and ``kueue_api.loader`` reads
multi-document YAML into these models with errors that name the file, document and field.
"""

from kueue_api.models import *  # noqa: F403
from kueue_api.models import __all__ as _model_names
from kueue_api.quantity import Quantity, QuantityFormat

__all__ = [*_model_names, "Quantity", "QuantityFormat"]
