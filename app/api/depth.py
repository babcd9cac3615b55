"""A bound on how deeply decoded JSON or YAML may nest, checked once, right after decoding.

Kubernetes objects nest about 20 levels at most (``metadata.managedFields[].fieldsV1`` mirrors the
schema's depth), but a decoder accepts far more: orjson 1,024 levels, PyYAML and the standard
library until Python's recursion limit. Deeper documents then fail wherever something walks them
recursively: equality and ``repr`` in C (``RecursionError``), or orjson when an answer echoes a
node object (it encodes at most 254 levels). Refusing them at the door, with the field where the
limit was crossed, makes every later step safe and every answer independent of the ones before.

:func:`json_too_deep` checks a request body at C speed (orjson re-encodes it, which it refuses past
254 levels: about 1 ms for a 400 KB node list, where a walk in Python takes 40) and walks it only to
name the field of a body that is too deep.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["MAX_DEPTH", "json_larger_than", "json_too_deep", "too_deep"]

MAX_DEPTH = 254
"""Deepest nesting of objects and arrays accepted in a request body or state file: what orjson
encodes, so that every accepted node can be echoed in an answer."""

_CONTAINERS = (dict, list)


def too_deep(doc: Any, limit: int = MAX_DEPTH) -> str | None:
    """The path (``a.b[3].c``) of the first value nested deeper than ``limit``, or None.

    Iterative, so it works on documents of any depth. Arrays and objects of scalars only (node
    name lists, labels) are recognised in C, so the common request costs little.
    """
    stack: list[tuple[Any, int, str]] = [(doc, 1, "")]
    while stack:
        value, depth, path = stack.pop()
        if depth > limit:
            return path or "(document)"
        if isinstance(value, dict):
            items: Any = value.values()
            if _scalars(items):
                continue
            stack.extend(
                (item, depth + 1, f"{path}.{key}" if path else str(key))
                for key, item in value.items()
                if isinstance(item, _CONTAINERS)
            )
        elif isinstance(value, list):
            if _scalars(value):
                continue
            stack.extend(
                (item, depth + 1, f"{path}[{i}]")
                for i, item in enumerate(value)
                if isinstance(item, _CONTAINERS)
            )
    return None


def _scalars(values: Any) -> bool:
    """Whether no value is a container: all strings (checked in C), or a short scan otherwise."""
    try:
        "".join(values)
        return True
    except TypeError:
        return False


def json_too_deep(doc: Any) -> str | None:
    """:func:`too_deep` with :data:`MAX_DEPTH` for a document decoded from JSON (string keys only)."""
    try:
        orjson.dumps(doc)
    except orjson.JSONEncodeError:
        return too_deep(doc) or "(document)"
    return None


_LITERAL_SIZES = {True: 4, False: 5, None: 4}


def json_larger_than(doc: Any, limit: int) -> bool:
    """Whether ``doc`` encodes to more than ``limit`` bytes of compact JSON (as orjson writes it).

    A walk in Python that stops as soon as the count passes ``limit``, so it costs at most about
    ``limit`` bytes' worth of values however large ``doc`` is, and never holds the GIL for long (an
    ``orjson.dumps`` of a 50 MiB value does, for its whole length). Strings and numbers are measured
    by orjson itself, one value at a time.
    """
    size = 0
    stack: list[Any] = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            size += 2 + len(value) + max(len(value) - 1, 0)  # braces, colons, commas
            for key, item in value.items():
                size += len(orjson.dumps(key))
                stack.append(item)
        elif isinstance(value, list):
            size += 2 + max(len(value) - 1, 0)  # brackets, commas
            stack.extend(value)
        elif value is None or isinstance(value, bool):
            size += _LITERAL_SIZES[value]
        else:
            size += len(orjson.dumps(value))
        if size > limit:
            return True
    return False
