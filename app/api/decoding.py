"""Decoding YAML and JSON files safely: integers too long for Python, nesting too deep, lone surrogates.

Shared by the state files of ``berth simulate`` / ``berth serve --state`` and the configuration
files of every command. What the standard decoders do with hostile input, and what berth does:

- an integer of more than 4,300 digits makes ``int()`` raise ValueError: it is kept as a
  :class:`HugeInt` (its text) and :func:`sanitize` reports it with its field path;
- YAML nested a few hundred levels deep exhausts Python's recursion limit while PyYAML composes
  it: :func:`recursion_limit` raises the limit for the load, :func:`sanitize` then refuses
  documents deeper than :data:`~app.api.depth.MAX_DEPTH` naming the field;
- an unpaired surrogate (``"\\ud800"``) would fail when printed: it becomes U+FFFD, as Go decodes it;
- a double-quoted YAML escape beyond Unicode (``"\\U0011FFFF"``) makes PyYAML's scanner raise
  ValueError or OverflowError from ``chr``: it is a YAML syntax error naming line and column.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import yaml

from app.api.depth import MAX_DEPTH
from app.api.errors import FieldError

__all__ = [
    "JSON_CHUNK_BYTES",
    "YAML_RECURSION_LIMIT",
    "DocumentLoader",
    "HugeInt",
    "JsonSyntaxError",
    "cut_managed_fields",
    "dismantle",
    "json_int",
    "loads_as_go",
    "loads_in_chunks",
    "loads_without_managed_fields",
    "recursion_limit",
    "sanitize",
    "too_deep_message",
    "yaml_int",
]


class HugeInt(str):
    """An integer literal with more digits than Python converts (4,300): kept as its text until
    :func:`sanitize` reports it with its field path; no Kubernetes field holds one (they are int64)."""

    def message(self) -> str:
        return f"integer of {sum(c.isdigit() for c in self)} digits is out of range"


def yaml_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | HugeInt:
    try:
        return int(loader.construct_yaml_int(node))
    except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
        return HugeInt(node.value)


class DocumentLoader(yaml.SafeLoader):
    """SafeLoader whose integers too long for Python become :class:`HugeInt`, for :func:`sanitize`,
    and whose escapes beyond Unicode are syntax errors."""

    def scan_flow_scalar_non_spaces(self, double: bool, start_mark: yaml.Mark) -> list[str]:
        try:
            return super().scan_flow_scalar_non_spaces(double, start_mark)
        except (ValueError, OverflowError):  # chr() of an escape such as \U0011FFFF or \UFFFFFFFF
            raise yaml.scanner.ScannerError(
                "while scanning a double-quoted scalar",
                start_mark,
                "found an escape beyond Unicode's last code point U+10FFFF",
                self.get_mark(),
            ) from None


DocumentLoader.add_constructor("tag:yaml.org,2002:int", yaml_int)


def json_int(text: str) -> int | HugeInt:
    try:
        return int(text)
    except ValueError:
        return HugeInt(text)


# PyYAML composes nested collections recursively, three Python frames a level: the default limit
# (1,000) stops at about 330 levels, before MAX_DEPTH can name the field. Pure-Python frames use no
# C stack (Python 3.11+), so a higher limit while composing is safe.
YAML_RECURSION_LIMIT = 8 * MAX_DEPTH + 1000


@contextlib.contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, previous))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def too_deep_message(path: str) -> str:
    return f"{path}: nested more than {MAX_DEPTH} levels deep"


def _has_surrogates(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _replace_surrogates(text: str) -> str:
    """Unpaired UTF-16 surrogates (``"\\ud800"`` in JSON or YAML) become U+FFFD, as Go's decoder makes them."""
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def sanitize(doc: Any, depth: int = 1) -> Any:
    """Check a decoded document in one iterative walk: nesting within MAX_DEPTH and no :class:`HugeInt`
    (raises FieldError naming the field); unpaired surrogates in keys and strings replaced in place.

    ``depth`` is the document's own nesting level: 3 for an item of a List's ``items``, checked alone.
    """
    if isinstance(doc, str):
        return _replace_surrogates(doc) if _has_surrogates(doc) else doc
    stack: list[tuple[Any, int, str]] = [(doc, depth, "")]
    while stack:
        container, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            raise FieldError(path, f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(container, dict):
            for key in list(container):
                value = container[key]
                if isinstance(key, str) and _has_surrogates(key):
                    del container[key]
                    key = _replace_surrogates(key)
                    container[key] = value
                child = f"{path}.{key}" if path else str(key)
                container[key] = _child(value, depth, child, stack)
        elif isinstance(container, list):
            for i, value in enumerate(container):
                container[i] = _child(value, depth, f"{path}[{i}]", stack)
    return doc


def _child(value: Any, depth: int, path: str, stack: list[tuple[Any, int, str]]) -> Any:
    if isinstance(value, HugeInt):
        raise FieldError(path, value.message())
    if isinstance(value, str):
        return _replace_surrogates(value) if _has_surrogates(value) else value
    if isinstance(value, dict | list):
        stack.append((value, depth + 1, path))
    return value


# --- large JSON bodies, decoded without holding the GIL for long -------------------------------

JSON_CHUNK_BYTES = 1 << 16
"""How much of a large JSON body one step of :func:`loads_in_chunks` parses (in C, under the GIL)."""


class JsonSyntaxError(ValueError):
    """A large JSON body that does not parse; the message is the parser's."""


class _Chunks:
    """A file-like view of ``data`` read ``JSON_CHUNK_BYTES`` at a time (ijson's input)."""

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self._at = 0

    def read(self, size: int) -> bytes:
        chunk = self._data[self._at : self._at + size]
        self._at += len(chunk)
        return bytes(chunk)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"invalid literal {name} (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text} is out of range for a float64")
    return value


def loads_as_go(data: bytes) -> Any:
    """``data`` decoded as Go's ``encoding/json`` decodes it: by orjson, and for what orjson refuses,
    by the standard library, which accepts what Go also accepts (an unpaired surrogate escape,
    ``"\\ud800"``, becomes U+FFFD, as Go makes it) and refuses the rest.

    Raises :class:`JsonSyntaxError` (orjson's message) for what is not JSON, and FieldError naming
    the field for what Go could not hold either: an integer of more than 4,300 digits, nesting past
    :data:`~app.api.depth.MAX_DEPTH` (checked here only on the fallback path; orjson's own limit
    is 1,024 levels).
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as err:
        refused = err
    try:
        doc = json.loads(data, parse_int=json_int, parse_float=_finite_float, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise JsonSyntaxError(str(refused)) from None
    return sanitize(doc)


def loads_in_chunks(data: bytes) -> Any:
    """``data`` decoded as one JSON document, :data:`JSON_CHUNK_BYTES` at a time.

    orjson decodes a whole document in one C call that holds the GIL: about a second for a 60 MiB
    body of small objects, during which no other thread (the event loop) runs. ijson's C backend
    (yajl) builds the same objects from one chunk per call, and between calls the interpreter hands
    the GIL to whoever waits for it. Differences from orjson, all refusals of what Go also refuses
    or replacements Go also makes: integers beyond int64 are refused (orjson makes them floats), an
    unpaired surrogate escape becomes ``?`` (Go: U+FFFD). Raises :class:`JsonSyntaxError`.
    """
    import ijson  # only large bodies need it

    try:
        # One document (trailing content is a "trailing garbage" error), its parse driven to the end.
        (doc,) = ijson.items(_Chunks(data), "", use_float=True, buf_size=JSON_CHUNK_BYTES)
    except (ijson.JSONError, ValueError) as err:
        raise JsonSyntaxError(" ".join(str(err).split())) from None
    return doc


def dismantle(doc: Any, slice_size: int = 256) -> None:
    """Free the decoded document ``doc`` a slice at a time.

    Dropping the last reference to a large document frees all of it in one C call, which holds the
    GIL for as long as that takes (about a second for a 34 MiB body of small objects on a loaded
    machine). Here small containers are emptied one by one, after their container children are
    set aside, and long arrays (where the bulk of a large document is: node items, selector terms)
    lose ``slice_size`` elements at a time, so the interpreter can hand the GIL over between steps.
    Only for documents (or lists of objects) nothing else refers to.
    """
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, list) and len(value) > slice_size:
            while value:
                del value[-slice_size:]
        elif isinstance(value, dict | list):
            children = value.values() if isinstance(value, dict) else value
            stack.extend(item for item in children if isinstance(item, dict | list))
            value.clear()


# --- watch events without their managedFields ---------------------------------------------------

_MANAGED_FIELDS_KEY = b',"managedFields":['
# A key that only a pod's generic ephemeral volume has: its volumeClaimTemplate is the one other
# ObjectMeta a Pod or Node holds, whose managedFields must not be taken for the object's own.
_NESTED_OBJECT_META_KEY = b'"ephemeral":'


def cut_managed_fields(data: bytes) -> bytes:
    """The JSON text ``data`` (a watch event of a Pod or a Node, as the API server writes it) with
    its object's ``metadata.managedFields`` cut out, or ``data`` itself when that is not certain.

    managedFields is about half of a pod's event, and every decoder of pods and nodes drops it
    (kube-scheduler's informers trim it too): cut from the bytes, orjson never builds it. The API
    server writes compact JSON in the Go structs' field order, which puts managedFields last in
    ObjectMeta: ``...,"managedFields":[...]},"spec":...``. The cut is made only where that shape is
    certain, by these facts of valid JSON (a quote inside a string is escaped, so an unescaped
    quote after a comma opens a string, and text after a closing quote is never a letter):

    - ``,"managedFields":[`` is a key ``managedFields`` and its array value's opening bracket;
    - the first ``]`` after it, followed by ``},"`` and a letter, is outside any string (were it
      inside one, that quote would close the string and be followed by a letter);
    - with no ``[`` or ``]`` byte at all between the two brackets, the array holds no array, so that
      ``]`` closes it; and ``}`` then closes the object it is the last key of.

    The key is then some object's managedFields. In a Pod or Node the only objects with that key
    are ObjectMeta: the object's own and a generic ephemeral volume's claim template; a document
    with an ``"ephemeral":`` key anywhere, or a second managedFields key, is left whole. Anything
    else (another field order, whitespace, no managedFields, nested arrays) is left whole too, and
    decoded as before.
    """
    start = data.find(_MANAGED_FIELDS_KEY)
    if start < 0:
        return data
    end = data.find(b"]", start)
    after = end + 4
    if (
        end < 0
        or data.find(b"[", start + len(_MANAGED_FIELDS_KEY), end) >= 0
        or data[end + 1 : after] != b'},"'
        or not data[after : after + 1].isalpha()
        or data.find(_MANAGED_FIELDS_KEY, end) >= 0
        or data.find(_NESTED_OBJECT_META_KEY) >= 0
    ):
        return data
    return data[:start] + data[end + 1 :]


def loads_without_managed_fields(data: bytes) -> Any:
    """One watch event of a Pod or Node decoded, without its object's ``metadata.managedFields``
    where :func:`cut_managed_fields` can cut them from the text (else with them)."""
    return orjson.loads(cut_managed_fields(data))
