"""``--feature-gates``: kube-scheduler's gates, parsed and checked as component-base does.

berth knows every gate of the kube-scheduler binary it mirrors (``app.featuregate_table``), so
a gate kube-scheduler accepts is accepted here, with the same default, and an unknown gate is
the same error. Only a few change what berth does (``COORDINATED_LEADER_ELECTION``, ...); the
others are accepted and recorded so that a configuration written for kube-scheduler runs
unchanged.

The process-wide gates live in :data:`DEFAULT`; ``berth run`` applies its flag there before
anything else is built, as kube-scheduler's pre-run hook does.
"""

from __future__ import annotations

import threading

from app.featuregate_table import DEPENDENCIES, GATES

__all__ = ["COORDINATED_LEADER_ELECTION", "DEFAULT", "FeatureGateError", "FeatureGates"]

COORDINATED_LEADER_ELECTION = "CoordinatedLeaderElection"

_SPECIAL = {"AllAlpha": "Alpha", "AllBeta": "Beta"}
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value kube-scheduler would reject, with its message."""


def _parse_bool(key: str, value: str) -> bool:
    """Go's ``strconv.ParseBool``, with component-base's message on failure."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise FeatureGateError(
        f'invalid value of {key}={value}, err: strconv.ParseBool: parsing "{value}": invalid syntax'
    )


class FeatureGates:
    """Known gates with their defaults, and the overrides set from the flag."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._overrides: dict[str, bool] = {}

    def set_flag(self, values: list[str]) -> None:
        """Apply every ``--feature-gates`` value as component-base's registry does: each entry is
        ``key=bool`` or ``kube:key=bool`` (the only component kube-scheduler registers), and the two
        spellings must not be mixed."""
        plain: list[str] = []
        prefixed: list[str] = []
        for value in values:
            for part in value.split(","):
                if not part.strip():
                    continue
                component, colon, rest = part.partition(":")
                if colon and "=" not in component:
                    if component.strip() != "kube":
                        raise FeatureGateError(f"component not registered: {component.strip()}")
                    prefixed.append(rest)
                else:
                    plain.append(part)
        if plain and prefixed:
            raise FeatureGateError(
                "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use"
            )
        self.set(",".join(plain or prefixed))

    def set(self, value: str) -> None:
        """Apply ``key1=true,key2=false``; every key must be known and settable, and every enabled
        gate's dependencies enabled (``FeatureGate.Set``'s checks and messages).

        Nothing is applied when any part is invalid, so a bad flag leaves the defaults intact.
        """
        parsed: dict[str, bool] = {}
        for part in value.split(","):
            if not part:
                continue
            key, sep, raw = part.partition("=")
            key = key.strip()
            if not sep:
                raise FeatureGateError(f"missing bool value for {key}")
            parsed[key] = _parse_bool(key, raw.strip())
        errors = []
        for key, enabled in parsed.items():
            if key in _SPECIAL:
                continue
            spec = GATES.get(key)
            if spec is None:
                raise FeatureGateError(f"unrecognized feature gate: {key}")
            default, _stage, locked = spec
            if locked and enabled != default:
                errors.append(
                    f"cannot set feature gate {key} to {str(enabled).lower()}, "
                    f"feature is locked to {str(default).lower()}"
                )
        if errors:
            raise FeatureGateError(_aggregate(errors))
        overrides = self.overrides()
        for special, stage in _SPECIAL.items():
            if special in parsed:
                for key, (_default, gate_stage, locked) in GATES.items():
                    if gate_stage == stage and not locked and key not in parsed:
                        overrides[key] = parsed[special]
        overrides.update({k: v for k, v in parsed.items() if k not in _SPECIAL})
        missing = dependency_errors(overrides)
        if missing:
            raise FeatureGateError(_aggregate(missing))
        with self._lock:
            self._overrides = overrides

    def enabled(self, key: str) -> bool:
        """Whether ``key`` is on: its override, else its default (KeyError for an unknown gate)."""
        with self._lock:
            if key in self._overrides:
                return self._overrides[key]
        return GATES[key][0]

    def overrides(self) -> dict[str, bool]:
        """The gates set explicitly (what ``--feature-gates`` changed), for logging."""
        with self._lock:
            return dict(self._overrides)

    def reset(self) -> None:
        """Back to the defaults (tests)."""
        with self._lock:
            self._overrides.clear()


def dependency_errors(overrides: dict[str, bool]) -> list[str]:
    """component-base's dependency check: an enabled gate whose dependencies are not all enabled."""

    def on(key: str) -> bool:
        return overrides.get(key, GATES[key][0] if key in GATES else False)

    errors = []
    for gate, needs in sorted(DEPENDENCIES.items()):
        if on(gate):
            off = [n for n in needs if not on(n)]
            if off:
                errors.append(
                    f"{gate} is enabled, but depends on features that are disabled: [{' '.join(off)}]"
                )
    return errors


def _aggregate(errors: list[str]) -> str:
    """``utilerrors.NewAggregate``'s message: one error alone, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


DEFAULT = FeatureGates()
"""The process's feature gates."""
