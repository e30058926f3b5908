"""The CEL environment Kubernetes evaluates CRD rules and DRA selectors in, built once per set
of variable names.

k8s.io/apiserver/pkg/cel/environment/base.go gives every Kubernetes expression CEL's standard
library with optional types and cross-type numeric comparisons, cel-go's strings, sets,
two-variable comprehensions and bindings extensions, and Kubernetes' own libraries. Here the
runtime's native extensions provide the first part and `library/` the Kubernetes functions that
rules and selectors use (quantity, semver, lists, regex). Variables are declared `dyn`: CRD
rules were type-checked against the schema when the CRD was accepted, so what is left to check
happens at evaluation, with the same results.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import Any, Final

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from kueue_api.cel.library import OVERLOADS
from kueue_api.cel.values import DESCRIPTOR_POOL

__all__ = ["environment"]

# Runtime extensions only reachable through an environment config.
_CONFIG: Final = """
name: kubernetes
extensions:
- name: sets
- name: two-var-comprehensions
"""


def _kubernetes_library() -> Any:
    by_name: dict[str, list[cel.Overload]] = defaultdict(list)
    for name, overload in OVERLOADS:
        by_name[name].append(overload)
    declarations = [cel.FunctionDecl(name, overloads) for name, overloads in by_name.items()]
    return cel.CelExtension("kubernetes", declarations)


@lru_cache(maxsize=8)
def environment(variables: frozenset[str]) -> Any:
    """The environment with `variables` declared (as `dyn`); one per set, built on first use.

    The Kubernetes library comes after the strings extension: it adds list overloads to
    `indexOf` and `lastIndexOf`, which the runtime merges into the strings' declarations."""
    return cel.NewEnv(
        descriptor_pool=DESCRIPTOR_POOL,
        config=cel.NewEnvConfigFromYaml(_CONFIG),
        variables=dict.fromkeys(sorted(variables), cel.Type.DYN),
        extensions=[
            ext_strings.ExtStrings(),
            ext_bindings.ExtBindings(),
            ext_optional.ExtOptional(),
            _kubernetes_library(),
        ],
    )
