"""DefaultPreemptionArgs (kubescheduler.config.k8s.io/v1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from app.api.errors import FieldError
from app.api.strict import API_VERSION, Obj, check_type_meta
from app.api.validation import child, invalid, raise_errors

KIND = "DefaultPreemptionArgs"


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    """How many candidate nodes preemption dry-runs: ``max(absolute, percentage% of nodes)``, capped."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    @classmethod
    def decode(cls, raw: Mapping[str, object] | None, path: str) -> Self:
        """Strictly decode v1 args, apply SetDefaults_DefaultPreemptionArgs, then validate."""
        obj = Obj({} if raw is None else raw, path)
        check_type_meta(obj, KIND)
        args = cls(
            min_candidate_nodes_percentage=obj.integer("minCandidateNodesPercentage", 10),
            min_candidate_nodes_absolute=obj.integer("minCandidateNodesAbsolute", 100),
        )
        obj.finish()
        raise_errors(args.validate(path))
        return args

    def validate(self, path: str = "") -> list[FieldError]:
        """ValidateDefaultPreemptionArgs."""
        errs: list[FieldError] = []
        pct_path = child(path, "minCandidateNodesPercentage")
        abs_path = child(path, "minCandidateNodesAbsolute")
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        if pct < 0 or pct > 100:
            errs.append(invalid(pct_path, pct, "not in valid range [0, 100]"))
        if absolute < 0:
            errs.append(invalid(abs_path, absolute, "not in valid range [0, inf)"))
        if pct == 0 and absolute == 0:
            errs.append(
                invalid(pct_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute")
            )
            errs.append(
                invalid(abs_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage")
            )
        return errs

    def to_dict(self) -> dict[str, object]:
        """The v1 form, as ``kube-scheduler --write-config-to`` writes it."""
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "minCandidateNodesAbsolute": self.min_candidate_nodes_absolute,
            "minCandidateNodesPercentage": self.min_candidate_nodes_percentage,
        }
