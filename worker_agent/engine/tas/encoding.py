"""TopologyAssignment encodings: v1beta2 compact form (as Kueue writes it) and the expanded form.

The v1beta2 Workload status stores ``topologyAssignment{levels, slices[]}``; each slice covers
``domainCount`` domains with, per level, either one ``universal`` value or ``individual`` roots
with an optional common ``prefix``/``suffix``, and ``podCounts`` ``universal`` or ``individual``.
Kueue (``pkg/util/tas/tas_assignment.go``, gate TASAssignmentsEncodingByHostnamePrefix on) cuts
hostname runs sharing a reusable ``-``-delimited prefix into slices, and keeps that unless one
fully compacted slice serialises shorter. :func:`to_v1beta2` makes the same choice, so the dicts
here are byte-for-byte what Kueue would write (JSON, camelCase keys, empty fields omitted).

The expanded form, one entry per leaf domain, is what ``mkq simulate`` prints:
``{"levels": [...], "domains": [{"values": [...], "count": n}]}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from worker_agent.engine.tas.assignment import DomainAssignment, TopologyAssignment
from worker_agent.engine.tas.nodes import HOSTNAME_LABEL

MAX_DOMAINS_PER_SLICE = 100_000
MAX_SLICES = 1_000


class EncodingError(ValueError):
    """A topologyAssignment document that is not a valid encoding; names the field."""


# -- encoding ----------------------------------------------------------------------------------


def _level_values(values: Sequence[str]) -> dict[str, Any]:
    """One level of one slice: ``universal`` if all equal, else roots with prefix/suffix."""
    prefix = values[0]
    suffix = values[0]
    max_len = min_len = len(values[0])
    for text in values[1:]:
        n = len(text)
        min_len = min(min_len, n)
        max_len = max(max_len, n)
        prefix = prefix[:n]
        if n < len(suffix):
            suffix = suffix[len(suffix) - n :]
        for i in range(len(prefix)):
            if text[i] != prefix[i]:
                prefix = prefix[:i]
                break
        for i in range(len(suffix)):
            if text[n - 1 - i] != suffix[len(suffix) - 1 - i]:
                suffix = suffix[len(suffix) - i :]
                break
    if len(prefix) == max_len:
        return {"universal": prefix}
    if len(prefix) + len(suffix) > min_len:
        prefix = prefix[: min_len - len(suffix)]
    individual: dict[str, Any] = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    end = len(suffix)
    individual["roots"] = [text[len(prefix) : len(text) - end] for text in values]
    return {"individual": individual}


def _compact_slice(levels: Sequence[str], domains: Sequence[DomainAssignment]) -> dict[str, Any]:
    counts = [domain.count for domain in domains]
    pod_counts: dict[str, Any]
    if all(count == counts[0] for count in counts):
        pod_counts = {"universal": counts[0]}
    else:
        pod_counts = {"individual": counts}
    return {
        "domainCount": len(domains),
        "valuesPerLevel": [
            _level_values([domain.values[idx] for domain in domains]) for idx in range(len(levels))
        ],
        "podCounts": pod_counts,
    }


def _document(levels: Sequence[str], slices: list[dict[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    if levels:
        doc["levels"] = list(levels)
    if slices:
        doc["slices"] = slices
    return doc


def encode_single_slice(assignment: TopologyAssignment) -> dict[str, Any]:
    """Every domain in one maximally compacted slice (Kueue's encoding with the gate off)."""
    slices = [_compact_slice(assignment.levels, assignment.domains)] if assignment.domains else []
    return _document(assignment.levels, slices)


def _prefix_candidates(hostname: str) -> list[int]:
    """End offsets of the ``-``-terminated prefixes of a hostname (never the whole name)."""
    return [end + 1 for end in range(len(hostname) - 1) if hostname[end] == "-"]


def _chunks(length: int) -> int:
    return (length + MAX_DOMAINS_PER_SLICE - 1) // MAX_DOMAINS_PER_SLICE


def _hostname_prefix_keys(hostnames: Sequence[str]) -> list[str] | None:
    """Per domain, its longest reusable prefix (seen at least twice), backing off in depth
    until the runs fit in :data:`MAX_SLICES` slices; ``None`` when no depth does."""
    ends = [_prefix_candidates(h) for h in hostnames]
    seen: dict[str, int] = {}
    for hostname, offsets in zip(hostnames, ends, strict=True):
        for end in offsets:
            prefix = hostname[:end]
            if seen.get(prefix, 0) < 2:
                seen[prefix] = seen.get(prefix, 0) + 1
    max_depth = max((len(offsets) for offsets in ends), default=0)
    for depth in range(max_depth, 0, -1):
        keys = [""] * len(hostnames)
        for i, hostname in enumerate(hostnames):
            offsets = ends[i]
            for j in range(min(len(offsets), depth) - 1, -1, -1):
                prefix = hostname[: offsets[j]]
                if seen.get(prefix, 0) >= 2:
                    keys[i] = prefix
                    break
        slice_count = 0
        start = 0
        for i in range(1, len(keys)):
            if keys[i] != keys[start]:
                slice_count += _chunks(i - start)
                start = i
        slice_count += _chunks(len(keys) - start)
        if slice_count <= MAX_SLICES:
            return keys
    return None


def _runs(
    domains: Sequence[DomainAssignment], keys: list[str] | None
) -> Iterator[Sequence[DomainAssignment]]:
    if not domains:
        return
    if not keys:
        yield domains
        return
    start = 0
    for i in range(1, len(domains)):
        if keys[i] != keys[start]:
            yield domains[start:i]
            start = i
    yield domains[start:]


def encode_by_hostname_prefix(assignment: TopologyAssignment) -> dict[str, Any]:
    """One slice per run of hostnames sharing a reusable prefix (at most 100,000 domains each)."""
    domains = assignment.domains
    levels = assignment.levels
    keys: list[str] | None = None
    if len(domains) > 1 and levels and levels[-1] == HOSTNAME_LABEL:
        keys = _hostname_prefix_keys([domain.values[-1] for domain in domains])
    slices: list[dict[str, Any]] = []
    for run in _runs(domains, keys):
        for start in range(0, len(run), MAX_DOMAINS_PER_SLICE):
            slices.append(_compact_slice(levels, run[start : start + MAX_DOMAINS_PER_SLICE]))
    return _document(levels, slices)


def _json_size(doc: Mapping[str, Any]) -> int:
    return len(json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode())


def to_v1beta2(assignment: TopologyAssignment) -> dict[str, Any]:
    """The compact ``topologyAssignment`` Kueue writes into ``status.admission``."""
    by_prefix = encode_by_hostname_prefix(assignment)
    if len(by_prefix.get("slices", [])) <= 1:
        return by_prefix
    if len(assignment.domains) > MAX_DOMAINS_PER_SLICE:
        return by_prefix
    single = encode_single_slice(assignment)
    if _json_size(single) < _json_size(by_prefix):
        return single
    return by_prefix


def to_expanded(assignment: TopologyAssignment) -> dict[str, Any]:
    """One entry per leaf domain, as ``mkq simulate`` prints it."""
    return {
        "levels": list(assignment.levels),
        "domains": [
            {"values": list(domain.values), "count": domain.count} for domain in assignment.domains
        ],
    }


# -- decoding ----------------------------------------------------------------------------------


def _field(obj: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise EncodingError(f"{path}.{key}: required field is missing")
    return obj[key]


def _as_mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise EncodingError(f"{path}: must be an object")
    return value


def _as_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise EncodingError(f"{path}: must be a list")
    return value


def _as_int(value: Any, path: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise EncodingError(f"{path}: must be an integer >= {minimum}")
    return value


def _as_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise EncodingError(f"{path}: must be a string")
    return value


def _decode_level(entry: Any, count: int, path: str) -> list[str]:
    level = _as_mapping(entry, path)
    universal = level.get("universal")
    individual = level.get("individual")
    if (universal is None) == (individual is None):
        raise EncodingError(f"{path}: exactly one of universal, individual must be set")
    if universal is not None:
        return [_as_str(universal, f"{path}.universal")] * count
    ind = _as_mapping(individual, f"{path}.individual")
    prefix = _as_str(ind.get("prefix") or "", f"{path}.individual.prefix")
    suffix = _as_str(ind.get("suffix") or "", f"{path}.individual.suffix")
    roots = _as_list(_field(ind, "roots", f"{path}.individual"), f"{path}.individual.roots")
    if len(roots) != count:
        raise EncodingError(f"{path}.individual.roots: must have domainCount ({count}) entries")
    return [
        prefix + _as_str(root, f"{path}.individual.roots[{i}]") + suffix
        for i, root in enumerate(roots)
    ]


def _decode_counts(entry: Any, count: int, path: str) -> list[int]:
    counts = _as_mapping(entry, path)
    universal = counts.get("universal")
    individual = counts.get("individual")
    if (universal is None) == (individual is None):
        raise EncodingError(f"{path}: exactly one of universal, individual must be set")
    if universal is not None:
        return [_as_int(universal, f"{path}.universal", 1)] * count
    items = _as_list(individual, f"{path}.individual")
    if len(items) != count:
        raise EncodingError(f"{path}.individual: must have domainCount ({count}) entries")
    return [_as_int(v, f"{path}.individual[{i}]", 1) for i, v in enumerate(items)]


def from_v1beta2(doc: Mapping[str, Any], path: str = "topologyAssignment") -> TopologyAssignment:
    """Decode any valid v1beta2 ``topologyAssignment`` (any split into slices)."""
    doc = _as_mapping(doc, path)
    levels = [
        _as_str(v, f"{path}.levels[{i}]")
        for i, v in enumerate(_as_list(_field(doc, "levels", path), f"{path}.levels"))
    ]
    if not levels:
        raise EncodingError(f"{path}.levels: must have at least 1 item")
    domains: list[DomainAssignment] = []
    for s_idx, raw in enumerate(_as_list(doc.get("slices") or [], f"{path}.slices")):
        spath = f"{path}.slices[{s_idx}]"
        item = _as_mapping(raw, spath)
        count = _as_int(_field(item, "domainCount", spath), f"{spath}.domainCount", 1)
        per_level = _as_list(_field(item, "valuesPerLevel", spath), f"{spath}.valuesPerLevel")
        if len(per_level) != len(levels):
            raise EncodingError(f"{spath}.valuesPerLevel: must have one entry per level")
        columns = [
            _decode_level(entry, count, f"{spath}.valuesPerLevel[{i}]")
            for i, entry in enumerate(per_level)
        ]
        pods = _decode_counts(_field(item, "podCounts", spath), count, f"{spath}.podCounts")
        for i in range(count):
            domains.append(DomainAssignment(values=tuple(col[i] for col in columns), count=pods[i]))
    return TopologyAssignment(levels=tuple(levels), domains=tuple(domains))


def from_expanded(doc: Mapping[str, Any], path: str = "topologyAssignment") -> TopologyAssignment:
    """Decode the expanded form (also v1beta1's ``domains[{values, count}]``)."""
    doc = _as_mapping(doc, path)
    levels = tuple(
        _as_str(v, f"{path}.levels[{i}]")
        for i, v in enumerate(_as_list(_field(doc, "levels", path), f"{path}.levels"))
    )
    domains: list[DomainAssignment] = []
    for i, raw in enumerate(_as_list(doc.get("domains") or [], f"{path}.domains")):
        dpath = f"{path}.domains[{i}]"
        item = _as_mapping(raw, dpath)
        values = tuple(
            _as_str(v, f"{dpath}.values[{j}]")
            for j, v in enumerate(_as_list(_field(item, "values", dpath), f"{dpath}.values"))
        )
        if len(values) != len(levels):
            raise EncodingError(f"{dpath}.values: must have one value per level")
        domains.append(
            DomainAssignment(values=values, count=_as_int(item.get("count"), f"{dpath}.count", 0))
        )
    return TopologyAssignment(levels=levels, domains=tuple(domains))
