"""Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`).

kubectl's typed commands send built-in objects as protobuf: the 4-byte magic `k8s\\0`, then a
`runtime.Unknown` envelope holding apiVersion, kind and the encoded object. The object is turned
into the same JSON dict a JSON client would have sent, using the field table in
`proto_schema.json` (see proto_schema_gen.py). Zero values (empty strings, false, 0, zero
times) are dropped, as Go's JSON encoding omits them.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from kueue_api.api_errors import ApiError, bad_request
from kueue_api.timestamps import micro_time, rfc3339

MAGIC = b"k8s\x00"
META = "k8s.io.apimachinery.pkg.apis.meta.v1."
_SCALARS = {"string", "bool", "int32", "int64", "uint32", "uint64", "double", "float", "bytes"}


@cache
def _schema() -> dict[str, dict[str, dict[str, Any]]]:
    table: dict[str, dict[str, dict[str, Any]]] = json.loads(
        Path(__file__).with_name("proto_schema.json").read_text()
    )
    return table


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if position >= len(data):
            raise bad_request("the protobuf body is truncated")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, raw value) in order."""
    found: list[tuple[int, int, Any]] = []
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, position = _varint(data, position)
        elif wire == 1:
            value = data[position : position + 8]
            position += 8
        elif wire == 2:
            length, position = _varint(data, position)
            value = data[position : position + length]
            position += length
        elif wire == 5:
            value = data[position : position + 4]
            position += 4
        else:
            raise bad_request(f"unsupported protobuf wire type {wire}")
        found.append((number, wire, value))
    return found


def _signed(value: int, bits: int = 64) -> int:
    return value - (1 << 64) if value >= 1 << (bits - 1) and value < 1 << 64 else value


def _scalar(kind: str, wire: int, value: Any) -> Any:
    if kind == "string":
        return bytes(value).decode()
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if kind == "bool":
        return bool(value)
    if kind in ("int32", "int64"):
        return _signed(int(value))
    if kind in ("uint32", "uint64"):
        return int(value)
    if kind == "double":
        import struct

        return struct.unpack("<d", value)[0]
    if kind == "float":
        import struct

        return struct.unpack("<f", value)[0]
    return value


def _packed(kind: str, value: bytes) -> list[Any]:
    items: list[Any] = []
    position = 0
    while position < len(value):
        number, position = _varint(value, position)
        items.append(_scalar(kind, 0, number))
    return items


def _special(name: str, data: bytes) -> Any:
    fields = {number: value for number, _, value in _fields(data)}
    if name in (META + "Time", META + "MicroTime"):
        seconds = _signed(int(fields.get(1, 0)))
        nanos = int(fields.get(2, 0))
        if not seconds and not nanos:
            return None
        moment = datetime.fromtimestamp(seconds + nanos / 1e9, UTC)
        return micro_time(moment) if name.endswith("MicroTime") else rfc3339(moment)
    if name == "k8s.io.apimachinery.pkg.api.resource.Quantity":
        return bytes(fields.get(1, b"")).decode()
    if name == "k8s.io.apimachinery.pkg.util.intstr.IntOrString":
        if int(fields.get(1, 0)) == 1:
            return bytes(fields.get(3, b"")).decode()
        return _signed(int(fields.get(2, 0)))
    if name in (META + "FieldsV1", "k8s.io.apimachinery.pkg.runtime.RawExtension"):
        raw = bytes(fields.get(1, b""))
        return json.loads(raw) if raw else None
    if name == META + "Duration":
        nanoseconds = _signed(int(fields.get(1, 0)))
        return f"{nanoseconds / 1e9:g}s"
    return ...


def decode_message(name: str, data: bytes) -> Any:
    special = _special(name, data) if name.startswith(("k8s.io.apimachinery",)) else ...
    if special is not ...:
        return special
    table = _schema().get(name)
    if table is None:
        raise ApiError(415, "UnsupportedMediaType", f"protobuf message {name} is not supported")
    result: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        field = table.get(str(number))
        if field is None:
            continue
        key = field["name"]
        if "map" in field:
            key_type, value_type = field["map"]
            entry = {n: (w, v) for n, w, v in _fields(value)}
            map_key = _decode_value(key_type, *entry.get(1, (2, b"")))
            map_value = _decode_value(value_type, *entry.get(2, (2, b"")))
            result.setdefault(key, {})[map_key] = map_value
            continue
        kind = field["type"]
        if field.get("repeated"):
            items = result.setdefault(key, [])
            if kind in _SCALARS and kind not in ("string", "bytes") and wire == 2:
                items.extend(_packed(kind, value))
            else:
                items.append(_decode_value(kind, wire, value))
            continue
        decoded = _decode_value(kind, wire, value)
        if (
            decoded is None
            or decoded == ""
            or decoded is False
            or (decoded == 0 and not isinstance(decoded, bool) and kind in _SCALARS)
        ):
            continue
        result[key] = decoded
    return result


def _decode_value(kind: str, wire: int, value: Any) -> Any:
    if kind in _SCALARS:
        return _scalar(kind, wire, value)
    return decode_message(kind, bytes(value))


def _package(api_version: str) -> str:
    group, _, version = api_version.rpartition("/")
    if not group:
        return f"k8s.io.api.core.{version}"
    if group == "meta.k8s.io":
        return f"k8s.io.apimachinery.pkg.apis.meta.{version}"
    return f"k8s.io.api.{group.split('.')[0]}.{version}"  # rbac.authorization.k8s.io -> rbac


def decode_object(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded object as a JSON-style dict with apiVersion and kind."""
    if not body.startswith(MAGIC):
        raise bad_request("the protobuf body does not start with the Kubernetes magic bytes")
    envelope = {number: value for number, _, value in _fields(body[len(MAGIC) :])}
    type_meta = {number: value for number, _, value in _fields(bytes(envelope.get(1, b"")))}
    api_version = bytes(type_meta.get(1, b"")).decode()
    kind = bytes(type_meta.get(2, b"")).decode()
    if not kind:
        raise bad_request("the protobuf body names no kind")
    encoding = bytes(envelope.get(3, b"")).decode()
    if encoding:
        raise ApiError(415, "UnsupportedMediaType", f"protobuf content encoding {encoding!r}")
    obj = decode_message(f"{_package(api_version)}.{kind}", bytes(envelope.get(2, b"")))
    if not isinstance(obj, dict):
        raise bad_request("the protobuf body is not an object")
    return {"apiVersion": api_version, "kind": kind, **obj}
