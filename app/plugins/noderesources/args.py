"""NodeResourcesFitArgs and NodeResourcesBalancedAllocationArgs (kubescheduler.config.k8s.io/v1)."""

from __future__ import annotations

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

FIT_KIND = "NodeResourcesFitArgs"
BALANCED_KIND = "NodeResourcesBalancedAllocationArgs"

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
#: Sorted, as ``sets.List`` gives them in kube-scheduler's NotSupported message.
SCORING_STRATEGY_TYPES: tuple[str, ...] = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

#: ``config.MaxCustomPriorityScore``: the top of a RequestedToCapacityRatio shape's score scale.
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource and its weight in a scoring strategy."""

    name: str
    weight: int = 1


@dataclass(frozen=True, slots=True)
class UtilizationShapePoint:
    """One point of the RequestedToCapacityRatio function: utilization 0..100 → score 0..10."""

    utilization: int
    score: int


@dataclass(frozen=True, slots=True)
class RequestedToCapacityRatioParam:
    """The RequestedToCapacityRatio scoring function."""

    shape: list[UtilizationShapePoint] = field(default_factory=list)


def default_resources() -> list[ResourceSpec]:
    """kube-scheduler's ``defaultResourceSpec``: cpu and memory, weight 1 each."""
    return [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    """How NodeResourcesFit scores nodes."""

    type: str = LEAST_ALLOCATED
    resources: list[ResourceSpec] = field(default_factory=default_resources)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    def to_dict(self) -> dict[str, object]:
        """The v1 form (omitempty fields left out when empty)."""
        out: dict[str, object] = {}
        if self.requested_to_capacity_ratio is not None:
            shape = [
                {"score": p.score, "utilization": p.utilization}
                for p in self.requested_to_capacity_ratio.shape
            ]
            out["requestedToCapacityRatio"] = {"shape": shape} if shape else {}
        if self.resources:
            out["resources"] = [_resource_dict(r) for r in self.resources]
        if self.type:
            out["type"] = self.type
        return out


def _resource_dict(r: ResourceSpec) -> dict[str, object]:
    # ResourceSpec.weight is `omitempty` in v1; after defaulting it is never 0, but keep the Go shape.
    return {"name": r.name, "weight": r.weight} if r.weight else {"name": r.name}


def _decode_resources(obj: Obj, key: str) -> list[ResourceSpec]:
    """A ``[]ResourceSpec``, with weight 0 (or unset) defaulted to 1 as both plugins' defaulting does."""
    out = []
    for p, item in obj.array(key):
        r = Obj(item, p)
        name = r.string("name")
        weight = r.integer("weight", bits=64)
        r.finish()
        out.append(ResourceSpec(name, weight or 1))
    return out


def _decode_shape(obj: Obj, key: str) -> list[UtilizationShapePoint]:
    out = []
    for p, item in obj.array(key):
        point = Obj(item, p)
        out.append(UtilizationShapePoint(point.integer("utilization"), point.integer("score")))
        point.finish()
    return out


def validate_function_shape(shape: list[UtilizationShapePoint], path: str) -> list[FieldError]:
    """validateFunctionShape: non-empty, strictly increasing utilization in [0, 100], score in [0, 10]."""
    if not shape:
        return [required(path, "at least one point must be specified")]
    errs: list[FieldError] = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(
                invalid(
                    child(index(path, i), "utilization"),
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if point.utilization < 0 or point.utilization > 100:
            errs.append(
                invalid(
                    child(index(path, i), "utilization"), point.utilization, "not in valid range [0, 100]"
                )
            )
        if point.score < 0 or point.score > MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(
                invalid(
                    child(index(path, i), "score"),
                    point.score,
                    f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                )
            )
    return errs


def _validate_resources(resources: list[ResourceSpec], path: str) -> list[FieldError]:
    errs = []
    for i, r in enumerate(resources):
        if r.weight <= 0 or r.weight > 100:
            errs.append(
                invalid(
                    child(index(path, i), "weight"),
                    r.weight,
                    f"resource weight of {r.name} not in valid range (0, 100]",
                )
            )
    return errs


@dataclass(frozen=True, slots=True)
class NodeResourcesFitArgs:
    """Args of NodeResourcesFit: resources the filter ignores and the scoring strategy."""

    ignored_resources: list[str] = field(default_factory=list)
    ignored_resource_groups: list[str] = field(default_factory=list)
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)

    @classmethod
    def decode(cls, raw: Mapping[str, object] | None, path: str) -> Self:
        """Strictly decode v1 args, apply SetDefaults_NodeResourcesFitArgs, then validate."""
        args = cls.decode_unvalidated(raw, path)
        raise_errors(args.validate(path))
        return args

    @classmethod
    def decode_unvalidated(cls, raw: Mapping[str, object] | None, path: str) -> Self:
        """Strictly decode and default, without :meth:`validate`.

        kube-scheduler's configuration validation skips NodeResourcesFit's args (its validator is
        registered under the name "NodeResourcesFitArgs", which no plugin has); they are validated
        when the plugin is built, so only where NodeResourcesFit is enabled.
        """
        obj = Obj({} if raw is None else raw, path)
        check_type_meta(obj, FIT_KIND)
        ignored = obj.string_list("ignoredResources")
        groups = obj.string_list("ignoredResourceGroups")
        ss = obj.nested("scoringStrategy")
        if ss is None:
            strategy = ScoringStrategy()
        else:
            # A given strategy keeps its (possibly empty) type; only empty resources are defaulted.
            stype = ss.string("type")
            resources = _decode_resources(ss, "resources") or default_resources()
            rtcr = ss.nested("requestedToCapacityRatio")
            param = None
            if rtcr is not None:
                param = RequestedToCapacityRatioParam(_decode_shape(rtcr, "shape"))
                rtcr.finish()
            ss.finish()
            strategy = ScoringStrategy(stype, resources, param)
        obj.finish()
        return cls(ignored, groups, strategy)

    def validate(self, path: str = "") -> list[FieldError]:
        """ValidateNodeResourcesFitArgs."""
        errs: list[FieldError] = []
        for i, res in enumerate(self.ignored_resources):
            errs.extend(validate_label_name(res, index(child(path, "ignoredResources"), i)))
        for i, group in enumerate(self.ignored_resource_groups):
            p = index(child(path, "ignoredResourceGroups"), i)
            if "/" in group:
                errs.append(invalid(p, group, "resource group name can't contain '/'"))
            errs.extend(validate_label_name(group, p))
        sp = child(path, "scoringStrategy")
        ss = self.scoring_strategy
        if ss.type not in SCORING_STRATEGY_TYPES:
            errs.append(not_supported(child(sp, "type"), ss.type, SCORING_STRATEGY_TYPES))
        errs.extend(_validate_resources(ss.resources, child(sp, "resources")))
        rp = child(sp, "requestedToCapacityRatio")
        if ss.type == REQUESTED_TO_CAPACITY_RATIO:
            if ss.requested_to_capacity_ratio is None:
                errs.append(required(rp, "must be specified when type is RequestedToCapacityRatio"))
            else:
                errs.extend(validate_function_shape(ss.requested_to_capacity_ratio.shape, child(rp, "shape")))
        elif ss.requested_to_capacity_ratio is not None:
            errs.append(forbidden(rp, "must be nil when type is not RequestedToCapacityRatio"))
        return errs

    def to_dict(self) -> dict[str, object]:
        """The v1 form, as ``kube-scheduler --write-config-to`` writes it."""
        out: dict[str, object] = {"apiVersion": API_VERSION}
        if self.ignored_resource_groups:
            out["ignoredResourceGroups"] = list(self.ignored_resource_groups)
        if self.ignored_resources:
            out["ignoredResources"] = list(self.ignored_resources)
        out["kind"] = FIT_KIND
        out["scoringStrategy"] = self.scoring_strategy.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class NodeResourcesBalancedAllocationArgs:
    """Args of NodeResourcesBalancedAllocation: the resources whose utilization is balanced."""

    resources: list[ResourceSpec] = field(default_factory=default_resources)

    @classmethod
    def decode(cls, raw: Mapping[str, object] | None, path: str) -> Self:
        """Strictly decode v1 args, apply SetDefaults_NodeResourcesBalancedAllocationArgs, then validate."""
        obj = Obj({} if raw is None else raw, path)
        check_type_meta(obj, BALANCED_KIND)
        resources = _decode_resources(obj, "resources") or default_resources()
        obj.finish()
        args = cls(resources)
        raise_errors(args.validate(path))
        return args

    def validate(self, path: str = "") -> list[FieldError]:
        """ValidateNodeResourcesBalancedAllocationArgs: unique names, every weight exactly 1."""
        errs: list[FieldError] = []
        seen: set[str] = set()
        rp = child(path, "resources")
        for i, r in enumerate(self.resources):
            if r.name in seen:
                errs.append(duplicate(child(index(rp, i), "name"), r.name))
            else:
                seen.add(r.name)
            if r.weight != 1:
                errs.append(invalid(child(index(rp, i), "weight"), r.weight, "must be 1"))
        return errs

    def to_dict(self) -> dict[str, object]:
        """The v1 form, as ``kube-scheduler --write-config-to`` writes it."""
        out: dict[str, object] = {"apiVersion": API_VERSION, "kind": BALANCED_KIND}
        if self.resources:
            out["resources"] = [_resource_dict(r) for r in self.resources]
        return out
