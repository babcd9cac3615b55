"""DynamicResourcesArgs (kubescheduler.config.k8s.io/v1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Self

from app import featuregates
from app.api.errors import FieldError
from app.api.strict import API_VERSION, Obj, check_type_meta
from app.api.validation import child, forbidden, format_duration, invalid, raise_errors

KIND = "DynamicResourcesArgs"
FILTER_TIMEOUT_DEFAULT = 10.0  # DynamicResourcesFilterTimeoutDefault
BINDING_TIMEOUT_DEFAULT = 600.0  # DynamicResourcesBindingTimeoutDefault

FILTER_TIMEOUT_GATE = "DRASchedulerFilterTimeout"
BINDING_CONDITIONS_GATES = ("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus")


def _binding_conditions_enabled() -> bool:
    return all(featuregates.DEFAULT.enabled(g) for g in BINDING_CONDITIONS_GATES)


@dataclass(frozen=True, slots=True)
class DynamicResourcesArgs:
    """How long Filter may search for devices on one node, and how long PreBind waits for binding
    conditions (seconds; None when the gate behind the field is off)."""

    filter_timeout: float | None = FILTER_TIMEOUT_DEFAULT
    binding_timeout: float | None = BINDING_TIMEOUT_DEFAULT

    @classmethod
    def decode(cls, raw: Mapping[str, object] | None, path: str) -> Self:
        """Strictly decode v1 args, apply SetDefaults_DynamicResourcesArgs, then validate."""
        obj = Obj({} if raw is None else raw, path)
        check_type_meta(obj, KIND)
        filter_set, binding_set = obj.has("filterTimeout"), obj.has("bindingTimeout")
        filter_timeout = obj.duration("filterTimeout") if filter_set else None
        binding_timeout = obj.duration("bindingTimeout") if binding_set else None
        obj.finish()
        errs: list[FieldError] = []
        if featuregates.DEFAULT.enabled(FILTER_TIMEOUT_GATE):
            if filter_timeout is None:
                filter_timeout = FILTER_TIMEOUT_DEFAULT
            elif filter_timeout < 0:
                errs.append(
                    invalid(
                        child(path, "filterTimeout"),
                        format_duration(filter_timeout),
                        "must be zero or positive",
                    )
                )
        elif filter_set:
            errs.append(
                forbidden(child(path, "filterTimeout"), "DRASchedulingFilterTimeout feature gate is disabled")
            )
        if _binding_conditions_enabled():
            if binding_timeout is None:
                binding_timeout = BINDING_TIMEOUT_DEFAULT
            elif binding_timeout < 1:
                errs.append(
                    invalid(
                        child(path, "bindingTimeout"),
                        format_duration(binding_timeout),
                        "must be at least 1 second",
                    )
                )
        elif binding_set:
            errs.append(
                forbidden(
                    child(path, "bindingTimeout"),
                    "DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
                )
            )
        raise_errors(errs)
        return cls(filter_timeout, binding_timeout)

    def to_dict(self) -> dict[str, object]:
        """The v1 form, as ``kube-scheduler --write-config-to`` writes it."""
        out: dict[str, object] = {"apiVersion": API_VERSION, "kind": KIND}
        if self.binding_timeout is not None:
            out["bindingTimeout"] = format_duration(self.binding_timeout)
        if self.filter_timeout is not None:
            out["filterTimeout"] = format_duration(self.filter_timeout)
        return out
