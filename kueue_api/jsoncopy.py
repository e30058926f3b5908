"""Deep copies of plain JSON: what the API serves, caches hold and writers change.

An orjson round trip copies a Kubernetes object several times faster than copy.deepcopy, which
walks every value through its memo; the agent copies a cached object before every write, the
manager every manifest it stores, kubesim every object it serves. Anything JSON cannot hold
as it is (a datetime, a dataclass, a subclass of str or dict, a non-string key) falls back to
deepcopy, so the copy is equal to the original and of the same types (enum members, which orjson
writes as their values, are the exception).
"""

from __future__ import annotations

import copy
from typing import TypeVar

import orjson

_Json = TypeVar("_Json")
# orjson would turn these into strings or dicts; passed through, they raise TypeError instead.
_EXACT = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def json_copy(value: _Json) -> _Json:
    try:
        copied: _Json = orjson.loads(orjson.dumps(value, option=_EXACT))
    except TypeError:
        return copy.deepcopy(value)
    return copied
