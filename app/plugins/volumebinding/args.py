"""VolumeBindingArgs (kubescheduler.config.k8s.io/v1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

from app import featuregates as gates
from app.api.errors import FieldError
from app.api.strict import API_VERSION, Obj, check_type_meta
from app.api.validation import child, invalid, raise_errors
from app.plugins.noderesources.args import (
    MAX_CUSTOM_PRIORITY_SCORE,
    UtilizationShapePoint,
    validate_function_shape,
)

KIND = "VolumeBindingArgs"
STORAGE_CAPACITY_SCORING = "StorageCapacityScoring"
DEFAULT_BIND_TIMEOUT_SECONDS = 600


def _default_shape() -> list[UtilizationShapePoint]:
    """SetDefaults_VolumeBindingArgs' shape with StorageCapacityScoring on: emptier nodes score higher."""
    return [UtilizationShapePoint(0, MAX_CUSTOM_PRIORITY_SCORE), UtilizationShapePoint(100, 0)]


@dataclass(frozen=True, slots=True)
class VolumeBindingArgs:
    """How long PreBind waits for the claims to be bound, and the storage-capacity scoring shape.

    ``shape`` is only allowed (and only defaulted) with the StorageCapacityScoring gate, alpha and off
    in v1.36; without it VolumeBinding does not score.
    """

    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: list[UtilizationShapePoint] | None = field(default=None)

    @classmethod
    def decode(cls, raw: Mapping[str, object] | None, path: str) -> Self:
        """Strictly decode v1 args, apply SetDefaults_VolumeBindingArgs, then validate."""
        obj = Obj({} if raw is None else raw, path)
        check_type_meta(obj, KIND)
        shape: list[UtilizationShapePoint] | None = None
        if obj.get("shape") is not None:
            shape = []
            for p, item in obj.array("shape"):
                point = Obj(item, p)
                shape.append(UtilizationShapePoint(point.integer("utilization"), point.integer("score")))
                point.finish()
        capacity_scoring = gates.DEFAULT.enabled(STORAGE_CAPACITY_SCORING)
        if not shape and capacity_scoring:
            shape = _default_shape()
        args = cls(obj.integer("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS, bits=64), shape)
        obj.finish()
        raise_errors(args.validate(path, capacity_scoring))
        return args

    def validate(self, path: str = "", capacity_scoring: bool = False) -> list[FieldError]:
        """ValidateVolumeBindingArgsWithOptions."""
        errs: list[FieldError] = []
        if self.bind_timeout_seconds < 0:
            errs.append(
                invalid(
                    child(path, "bindTimeoutSeconds"),
                    self.bind_timeout_seconds,
                    "invalid BindTimeoutSeconds, should not be a negative value",
                )
            )
        if capacity_scoring:
            errs.extend(validate_function_shape(self.shape or [], child(path, "shape")))
        elif self.shape is not None:
            errs.append(
                invalid(
                    child(path, "shape"),
                    [{"utilization": p.utilization, "score": p.score} for p in self.shape],
                    "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
                )
            )
        return errs

    def to_dict(self) -> dict[str, object]:
        """The v1 form, as ``kube-scheduler --write-config-to`` writes it (shape omitted when empty)."""
        out: dict[str, object] = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "bindTimeoutSeconds": self.bind_timeout_seconds,
        }
        if self.shape:
            out["shape"] = [{"utilization": p.utilization, "score": p.score} for p in self.shape]
        return out
