"""PodTopologySpreadArgs (kubescheduler.config.k8s.io/v1)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

from app.api.errors import FieldError
from app.api.strict import API_VERSION, Obj, check_type_meta
from app.api.validation import (
    child,
    duplicate,
    forbidden,
    index,
    invalid,
    not_supported,
    raise_errors,
    required,
    validate_label_name,
)

KIND = "PodTopologySpreadArgs"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
#: Sorted, as kube-scheduler lists them (``sets.List``).
WHEN_UNSATISFIABLE_VALUES: tuple[str, ...] = ("DoNotSchedule", "ScheduleAnyway")


def _decode_label_selector(obj: Obj | None) -> None:
    """Strict shape check of a ``metav1.LabelSelector`` (the args forbid one, but decoding comes first)."""
    if obj is None:
        return
    match_labels = obj.nested("matchLabels")
    if match_labels is not None:
        for key in match_labels.raw:
            match_labels.string(key)
        match_labels.finish()
    for p, item in obj.array("matchExpressions"):
        expr = Obj(item, p)
        expr.string("key")
        expr.string("operator")
        expr.string_list("values")
        expr.finish()
    obj.finish()


def _decode_constraint(item: object, path: str) -> dict[str, object]:
    """Strictly type-check one ``v1.TopologySpreadConstraint`` and return a copy of its raw form."""
    c = Obj(item, path)
    c.integer("maxSkew")
    c.string("topologyKey")
    c.string("whenUnsatisfiable")
    _decode_label_selector(c.nested("labelSelector"))
    c.optional_integer("minDomains")
    c.string("nodeAffinityPolicy")
    c.string("nodeTaintsPolicy")
    c.string_list("matchLabelKeys")
    c.finish()
    return copy.deepcopy(dict(c.raw))


@dataclass(frozen=True, slots=True)
class PodTopologySpreadArgs:
    """Cluster-level default spread constraints.

    ``default_constraints`` are raw v1 ``TopologySpreadConstraint`` dicts (camelCase), already validated;
    the object-model parsers turn them into typed constraints.
    """

    default_constraints: list[dict[str, object]] = field(default_factory=list)
    defaulting_type: str = SYSTEM_DEFAULTING

    @classmethod
    def decode(cls, raw: Mapping[str, object] | None, path: str) -> Self:
        """Strictly decode v1 args, apply SetDefaults_PodTopologySpreadArgs, then validate."""
        obj = Obj({} if raw is None else raw, path)
        check_type_meta(obj, KIND)
        constraints = [_decode_constraint(item, p) for p, item in obj.array("defaultConstraints")]
        defaulting = obj.string("defaultingType") or SYSTEM_DEFAULTING
        obj.finish()
        args = cls(constraints, defaulting)
        raise_errors(args.validate(path))
        return args

    def validate(self, path: str = "") -> list[FieldError]:
        """ValidatePodTopologySpreadArgs."""
        errs: list[FieldError] = []
        dp = child(path, "defaultingType")
        if self.defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            errs.append(not_supported(dp, self.defaulting_type, [SYSTEM_DEFAULTING, LIST_DEFAULTING]))
        elif self.defaulting_type == SYSTEM_DEFAULTING and self.default_constraints:
            errs.append(invalid(dp, self.defaulting_type, "when .defaultConstraints are not empty"))
        cp = child(path, "defaultConstraints")
        seen: list[tuple[object, object]] = []
        for i, c in enumerate(self.default_constraints):
            p = index(cp, i)
            max_skew = c.get("maxSkew") or 0
            if not isinstance(max_skew, int) or max_skew <= 0:
                errs.append(invalid(child(p, "maxSkew"), max_skew, "not in valid range (0, inf)"))
            key = c.get("topologyKey") or ""
            if not key:
                errs.append(required(child(p, "topologyKey"), "can not be empty"))
            else:
                errs.extend(validate_label_name(str(key), child(p, "topologyKey")))
            when = c.get("whenUnsatisfiable") or ""
            if not when:
                errs.append(required(child(p, "whenUnsatisfiable"), "can not be empty"))
            elif when not in WHEN_UNSATISFIABLE_VALUES:
                errs.append(not_supported(child(p, "whenUnsatisfiable"), when, WHEN_UNSATISFIABLE_VALUES))
            if c.get("labelSelector") is not None:
                errs.append(
                    forbidden(
                        child(p, "labelSelector"),
                        "constraint must not define a selector, as they deduced for each pod",
                    )
                )
            if (key, when) in seen:
                errs.append(duplicate(p, f"{{{key}, {when}}}"))
            seen.append((key, when))
        return errs

    def to_dict(self) -> dict[str, object]:
        """The v1 form, as ``kube-scheduler --write-config-to`` writes it."""
        out: dict[str, object] = {"apiVersion": API_VERSION}
        if self.default_constraints:
            out["defaultConstraints"] = copy.deepcopy(self.default_constraints)
        if self.defaulting_type:
            out["defaultingType"] = self.defaulting_type
        out["kind"] = KIND
        return out
