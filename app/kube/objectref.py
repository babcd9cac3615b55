"""``v1.ObjectReference`` of an object, as client-go's ``reference.GetReference`` builds it.

An event names the object it is about (``regarding``) and optionally a second one (``related``, the
preemptor of a Preempted event) with such a reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.api.objects import Node, Pod

__all__ = ["ObjectRef"]

# berth's parsed objects keep the raw dict, which may lack TypeMeta (list items carry none); their
# kind is known from their class, as client-go knows it from the scheme.
_KINDS: dict[type, tuple[str, str]] = {Pod: ("Pod", "v1"), Node: ("Node", "v1")}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """A reference to one object; hashable, so that isomorphic events can be found by it."""

    kind: str
    api_version: str
    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""

    @classmethod
    def of(cls, obj: object) -> ObjectRef | None:
        """The reference to ``obj``: an ObjectRef, a raw object (with ``kind`` and ``apiVersion``),
        or a parsed :class:`~app.api.objects.Pod` / :class:`~app.api.objects.Node`.

        None when the kind cannot be told (a raw dict without TypeMeta, anything else), as
        ``GetReference`` fails for an object the scheme does not know.
        """
        if isinstance(obj, ObjectRef):
            return obj
        kind, api_version = _KINDS.get(type(obj), ("", ""))
        raw: object = getattr(obj, "raw", None) if kind else obj
        if not isinstance(raw, Mapping):
            return None
        kind = _str(raw.get("kind")) or kind
        api_version = _str(raw.get("apiVersion")) or api_version
        if not kind or not api_version:
            return None
        meta = raw.get("metadata")
        if not isinstance(meta, Mapping):
            meta = {}
        return cls(
            kind=kind,
            api_version=api_version,
            name=_str(meta.get("name")),
            namespace=_str(meta.get("namespace")),
            uid=_str(meta.get("uid")),
            resource_version=_str(meta.get("resourceVersion")),
        )

    def to_dict(self) -> dict[str, str]:
        """The JSON form; empty fields are omitted (``omitempty``)."""
        fields = {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "apiVersion": self.api_version,
            "resourceVersion": self.resource_version,
        }
        return {k: v for k, v in fields.items() if v}
