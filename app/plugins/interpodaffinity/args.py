"""InterPodAffinityArgs (kubescheduler.config.k8s.io/v1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from app.api.errors import FieldError
from app.api.strict import API_VERSION, Obj, check_type_meta
from app.api.validation import child, invalid, raise_errors

KIND = "InterPodAffinityArgs"


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs:
    """Scoring weight of existing pods' required affinity terms, and whether to ignore preferred ones."""

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    @classmethod
    def decode(cls, raw: Mapping[str, object] | None, path: str) -> Self:
        """Strictly decode v1 args, apply SetDefaults_InterPodAffinityArgs, then validate."""
        obj = Obj({} if raw is None else raw, path)
        check_type_meta(obj, KIND)
        args = cls(
            hard_pod_affinity_weight=obj.integer("hardPodAffinityWeight", 1),
            ignore_preferred_terms_of_existing_pods=obj.boolean("ignorePreferredTermsOfExistingPods"),
        )
        obj.finish()
        raise_errors(args.validate(path))
        return args

    def validate(self, path: str = "") -> list[FieldError]:
        """ValidateInterPodAffinityArgs: hardPodAffinityWeight in [0, 100]."""
        w = self.hard_pod_affinity_weight
        if w < 0 or w > 100:
            return [invalid(child(path, "hardPodAffinityWeight"), w, "not in valid range [0, 100]")]
        return []

    def to_dict(self) -> dict[str, object]:
        """The v1 form, as ``kube-scheduler --write-config-to`` writes it."""
        return {
            "apiVersion": API_VERSION,
            "hardPodAffinityWeight": self.hard_pod_affinity_weight,
            "ignorePreferredTermsOfExistingPods": self.ignore_preferred_terms_of_existing_pods,
            "kind": KIND,
        }
