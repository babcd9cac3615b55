"""Strict decoding of plain YAML/JSON data, like kube-scheduler's strict serializer.

:class:`Obj` wraps one JSON object at a field path. Typed getters check the JSON type of each field
(Go's ``json`` refuses a string where an int32 is declared, for example), and :meth:`Obj.finish` rejects
every key that no getter asked for, as ``unknown field "x"``. Every problem becomes a
:class:`~app.api.errors.FieldError` naming the full path, never a ``KeyError``/``TypeError``.
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import Iterator, Mapping
from typing import Any

from app.api.errors import FieldError
from app.api.validation import child, go_value, index, invalid, not_supported, parse_duration

__all__ = ["API_VERSION", "Obj", "check_type_meta", "items", "json_kind"]

#: The only registered group/version of KubeSchedulerConfiguration and plugin args in kube-scheduler 1.36.
API_VERSION = "kubescheduler.config.k8s.io/v1"

_INT_BOUNDS = {32: (-(2**31), 2**31 - 1), 64: (-(2**63), 2**63 - 1)}


def json_kind(value: object) -> str:
    """The JSON type name of ``value``, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _type_error(path: str, value: object, want: str) -> FieldError:
    return FieldError(path, f"Invalid value: {go_value(value)}: expected {want}, got {json_kind(value)}")


def as_mapping(value: object, path: str) -> Mapping[str, object]:
    """``value`` as a JSON object, or a FieldError."""
    if not isinstance(value, Mapping):
        raise _type_error(path, value, "an object")
    for key in value:
        if not isinstance(key, str):
            raise FieldError(path, f"Invalid value: {go_value(key)}: object keys must be strings")
    return value


def items(value: object, path: str) -> Iterator[tuple[str, object]]:
    """Iterate a JSON array as ``(path[i], item)``; ``None`` is an empty array (Go leaves nil)."""
    if value is None:
        return
    if not isinstance(value, list | tuple):
        raise _type_error(path, value, "an array")
    for i, item in enumerate(value):
        yield index(path, i), item


def to_str(value: object, path: str) -> str:
    """A JSON string."""
    if not isinstance(value, str):
        raise _type_error(path, value, "a string")
    return value


def to_int(value: object, path: str, bits: int = 32) -> int:
    """A JSON integer that fits Go's int32/int64 (integral floats such as ``1.0`` are accepted)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(path, value, "an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise _type_error(path, value, "an integer")
        value = int(value)
    low, high = _INT_BOUNDS[bits]
    if not low <= value <= high:
        raise FieldError(path, f"Invalid value: {value}: out of range for int{bits}")
    return value


class Obj:
    """A JSON object being decoded strictly at ``path``.

    Getters return Go's zero value (or the given default) for absent or ``null`` fields, the way
    ``encoding/json`` leaves a field untouched. Call :meth:`finish` after reading all known fields.
    """

    def __init__(self, raw: object, path: str) -> None:
        self.path = path
        self.raw: Mapping[str, object] = as_mapping(raw, path)
        self._seen: set[str] = set()

    def at(self, key: str) -> str:
        """The path of field ``key``."""
        return child(self.path, key)

    def get(self, key: str) -> object:
        """The raw value of ``key`` (``None`` if absent), marking it known."""
        self._seen.add(key)
        return self.raw.get(key)

    def has(self, key: str) -> bool:
        """Whether ``key`` is present with a non-null value (Go pointer fields: set vs nil)."""
        return self.raw.get(key) is not None

    def string(self, key: str, default: str = "") -> str:
        """A string field."""
        value = self.get(key)
        return default if value is None else to_str(value, self.at(key))

    def optional_string(self, key: str) -> str | None:
        """A ``*string`` field: ``None`` when unset."""
        self._seen.add(key)
        return self.string(key) if self.has(key) else None

    def boolean(self, key: str, default: bool = False) -> bool:
        """A boolean field."""
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise _type_error(self.at(key), value, "a boolean")
        return value

    def optional_boolean(self, key: str) -> bool | None:
        """A ``*bool`` field: ``None`` when unset."""
        self._seen.add(key)
        return self.boolean(key) if self.has(key) else None

    def integer(self, key: str, default: int = 0, bits: int = 32) -> int:
        """An int32/int64 field."""
        value = self.get(key)
        return default if value is None else to_int(value, self.at(key), bits)

    def optional_integer(self, key: str, bits: int = 32) -> int | None:
        """A ``*int32``/``*int64`` field: ``None`` when unset."""
        self._seen.add(key)
        return self.integer(key, bits=bits) if self.has(key) else None

    def number(self, key: str, default: float = 0.0) -> float:
        """A float32/float64 field."""
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _type_error(self.at(key), value, "a number")
        return float(value)

    def duration(self, key: str, default: float = 0.0) -> float:
        """A ``metav1.Duration`` field (Go duration string) in seconds."""
        value = self.get(key)
        if value is None:
            return default
        text = to_str(value, self.at(key))
        try:
            return parse_duration(text)
        except ValueError as err:
            raise invalid(self.at(key), text, str(err)) from None

    def byte_string(self, key: str) -> bytes:
        """A ``[]byte`` field: base64 text in JSON/YAML."""
        value = self.get(key)
        if value is None:
            return b""
        text = to_str(value, self.at(key))
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise invalid(self.at(key), text, "illegal base64 data") from None

    def string_list(self, key: str) -> list[str]:
        """A ``[]string`` field."""
        return [to_str(v, p) for p, v in items(self.get(key), self.at(key))]

    def array(self, key: str) -> Iterator[tuple[str, object]]:
        """Iterate an array field as ``(path, item)``."""
        return items(self.get(key), self.at(key))

    def nested(self, key: str) -> Obj | None:
        """A nested object field, or ``None`` when unset."""
        value = self.get(key)
        return None if value is None else Obj(value, self.at(key))

    def raw_copy(self, key: str) -> Any:
        """A deep copy of the raw value of ``key`` (kept verbatim, e.g. untyped plugin args)."""
        return copy.deepcopy(self.get(key))

    def finish(self) -> None:
        """Reject keys that no getter asked for, in document order."""
        for key in self.raw:
            if key not in self._seen:
                raise FieldError(self.at(key), f'unknown field "{key}"')


def check_type_meta(obj: Obj, kind: str) -> None:
    """Accept optional ``apiVersion``/``kind`` on plugin args; when present they must name ``kind`` in v1.

    kube-scheduler decodes args with the GVK ``kubescheduler.config.k8s.io/v1, Kind=<Name>Args`` as the
    default, so both fields may be omitted; a different kind is rejected ("args for plugin X were not of
    type ...").
    """
    api_version = obj.string("apiVersion")
    if api_version and api_version != API_VERSION:
        raise not_supported(obj.at("apiVersion"), api_version, [API_VERSION])
    got = obj.string("kind")
    if got and got != kind:
        raise not_supported(obj.at("kind"), got, [kind])
