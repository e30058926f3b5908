"""Building blocks shared by every model: the two model bases and the scalar types.

Kueue kinds reject fields they do not know (as the API server does with strict field
validation); core Kubernetes kinds keep unknown fields untouched, because real manifests carry
many fields (image, command, ports...) that the project never reads but must pass through.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, ClassVar, Final

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PlainSerializer,
    Strict,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails

from kueue_api.quantity import Quantity
from kueue_api.timestamps import micro_time, rfc3339

__all__ = [
    "DNS1123_LABEL_PATTERN",
    "DNS1123_SUBDOMAIN_PATTERN",
    "QUALIFIED_NAME_PATTERN",
    "CoreModel",
    "Duration",
    "Int32",
    "Int64",
    "KueueModel",
    "LabelMap",
    "QualifiedName",
    "Quantity",
    "ResourceList",
    "StrictBool",
    "StrictStr",
    "SubdomainName",
    "Time",
    "format_duration",
    "format_time",
    "parse_duration",
]

DNS1123_SUBDOMAIN_PATTERN: Final = (
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
DNS1123_LABEL_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUALIFIED_NAME_PATTERN: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


def _drop_nulls(data: Any) -> Any:
    """``field: null`` means "not set" to the Kubernetes API, as if the key were absent."""
    if isinstance(data, dict) and None in data.values():
        return {key: value for key, value in data.items() if value is not None}
    return data


class KueueModel(BaseModel):
    """Base of every Kueue API struct: camelCase aliases, unknown fields are errors."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_default=False,
        # A field's docstring is its description in the JSON schema, hence in the CRDs.
        use_attribute_docstrings=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _nulls_are_absent(cls, data: Any) -> Any:
        return _drop_nulls(data)


class CoreModel(BaseModel):
    """Base of core Kubernetes structs: the fields we read are typed, the rest are kept.

    A struct that lists ``other_fields`` (the Kubernetes fields it does not type) rejects any
    other key, as ``kubectl --validate=strict`` would: a misspelt ``resoures`` must not pass
    as an unknown-but-kept field. Structs without the list (status blocks, which newer
    Kubernetes versions extend) keep whatever they are given.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        validate_default=False,
        use_attribute_docstrings=True,
    )

    other_fields: ClassVar[frozenset[str] | None] = None
    _allowed_keys: ClassVar[dict[type[BaseModel], frozenset[str]]] = {}

    @model_validator(mode="wrap")
    @classmethod
    def _nulls_are_absent(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        data = _drop_nulls(data)
        unknown = cls._unknown_keys(data)
        if not unknown:
            return handler(data)
        errors = [
            InitErrorDetails(type="extra_forbidden", loc=(key,), input=data[key]) for key in unknown
        ]
        try:
            handler({key: value for key, value in data.items() if key not in unknown})
        except ValidationError as error:
            # Report the unknown keys together with everything else that is wrong.
            errors.extend(
                InitErrorDetails(
                    type=item["type"], loc=item["loc"], input=item["input"], ctx=item.get("ctx", {})
                )
                for item in error.errors()
            )
        raise ValidationError.from_exception_data(cls.__name__, errors)

    @classmethod
    def _unknown_keys(cls, data: Any) -> list[str]:
        if cls.other_fields is None or not isinstance(data, dict):
            return []
        allowed = CoreModel._allowed_keys.get(cls)
        if allowed is None:
            declared = {info.alias or name for name, info in cls.model_fields.items()}
            declared |= set(cls.model_fields)
            allowed = frozenset(declared) | cls.other_fields
            CoreModel._allowed_keys[cls] = allowed
        return [key for key in data if key not in allowed]
        allowed = CoreModel._allowed_keys.get(cls)
        if allowed is None:
            declared = {info.alias or name for name, info in cls.model_fields.items()}
            declared |= set(cls.model_fields)
            allowed = frozenset(declared) | cls.other_fields
            CoreModel._allowed_keys[cls] = allowed
        unknown = [key for key in data if key not in allowed]
        if unknown:
            raise ValidationError.from_exception_data(
                cls.__name__,
                [
                    InitErrorDetails(type="extra_forbidden", loc=(key,), input=data[key])
                    for key in unknown
                ],
            )
        return data


def _check_int32(value: int) -> int:
    if not -(2**31) <= value < 2**31:
        raise ValueError("must fit in a 32-bit signed integer")
    return value


def _check_int64(value: int) -> int:
    if not -(2**63) <= value < 2**63:
        raise ValueError("must fit in a 64-bit signed integer")
    return value


Int32 = Annotated[
    int, Strict(), AfterValidator(_check_int32), Field(json_schema_extra={"format": "int32"})
]
Int64 = Annotated[
    int, Strict(), AfterValidator(_check_int64), Field(json_schema_extra={"format": "int64"})
]
StrictStr = Annotated[str, Strict()]
StrictBool = Annotated[bool, Strict()]
SubdomainName = Annotated[str, Strict(), Field(max_length=253, pattern=DNS1123_SUBDOMAIN_PATTERN)]
QualifiedName = Annotated[str, Strict(), Field(max_length=317, pattern=QUALIFIED_NAME_PATTERN)]
LabelMap = dict[str, StrictStr]
ResourceList = dict[str, Quantity]


# -- time ------------------------------------------------------------------------------------


def _parse_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("z", "Z"))
        except ValueError:
            raise ValueError(f"{value!r} is not an RFC 3339 time") from None
    else:
        raise ValueError(f"must be an RFC 3339 time string, not {type(value).__name__}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def format_time(value: datetime) -> str:
    """RFC 3339 in UTC, as Kubernetes writes ``metav1.Time`` (fractions kept when present)."""
    return micro_time(value) if value.microsecond else rfc3339(value)


Time = Annotated[
    datetime,
    BeforeValidator(_parse_time),
    PlainSerializer(format_time, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


# -- durations (metav1.Duration, Go's time.Duration string form) -----------------------------

_DURATION_UNITS: Final[dict[str, timedelta]] = {
    "ns": timedelta(microseconds=1) / 1000,
    "us": timedelta(microseconds=1),
    "µs": timedelta(microseconds=1),
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
}
_DURATION_PART: Final = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> timedelta:
    """Parse Go's duration syntax ("1h30m", "90s", "500ms", "0")."""
    body = text.strip()
    sign = 1
    if body[:1] in "+-" and body:
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return timedelta(0)
    position, total = 0, timedelta(0)
    if not body:
        raise ValueError(f"{text!r} is not a duration (like '30s', '5m', '1h30m')")
    while position < len(body):
        match = _DURATION_PART.match(body, position)
        if match is None:
            raise ValueError(f"{text!r} is not a duration (like '30s', '5m', '1h30m')")
        total += _DURATION_UNITS[match.group(2)] * float(match.group(1))
        position = match.end()
    return total * sign


def format_duration(value: timedelta) -> str:
    """Go's ``Duration.String()`` form, e.g. "1h30m0s", "5m0s", "1.5s", "0s"."""
    micros = round(value / timedelta(microseconds=1))
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    if micros < 1_000_000:
        if micros % 1000 == 0:
            return f"{sign}{micros // 1000}ms"
        return f"{sign}{micros}µs"
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, fraction = divmod(rest, 1_000_000)
    seconds_text = str(seconds)
    if fraction:
        seconds_text += "." + f"{fraction:06d}".rstrip("0")
    text = f"{seconds_text}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _validate_duration(value: Any) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, str):
        return parse_duration(value)
    raise ValueError(f"must be a duration string like '5m', not {type(value).__name__}")


Duration = Annotated[
    timedelta,
    BeforeValidator(_validate_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema({"type": "string"}),
]


# -- CRD schema markers (kubebuilder's listType / XValidation), carried in the JSON schema ------


def list_map(*keys: str) -> dict[str, Any]:
    """``+listType=map`` with ``+listMapKey`` keys: items are unique by these keys."""
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


def list_set() -> dict[str, Any]:
    """``+listType=set``: items are unique scalars."""
    return {"x-kubernetes-list-type": "set"}


def list_atomic() -> dict[str, Any]:
    return {"x-kubernetes-list-type": "atomic"}


def cel(*rules: tuple[str, str]) -> dict[str, Any]:
    """``+kubebuilder:validation:XValidation`` rules as (CEL rule, message) pairs."""
    return {
        "x-kubernetes-validations": [{"rule": rule, "message": message} for rule, message in rules]
    }
