"""``--feature-gates``: kube-scheduler's gates, parsed and checked as component-base does.

berth knows every gate of the kube-scheduler binary it mirrors (``app.featuregate_table``), so
a gate kube-scheduler accepts is accepted here, with the same default, and an unknown gate is
the same error. Only a few change what berth does (``COORDINATED_LEADER_ELECTION``, ...); the
others are accepted and recorded so that a configuration written for kube-scheduler runs
unchanged.

The process-wide gates live in :data:`DEFAULT`; ``berth run`` applies its flag there before
anything else is built, as kube-scheduler's pre-run hook does.

``--emulated-version`` (1.33 to 1.36, as kube-scheduler v1.36.3 allows) picks, for every gate, the
newest of its versioned specs not newer than the emulated version (component-base's
``featureSpecAtEmulationAndMinCompatVersion``): a gate with no such spec is PreAlpha there and
cannot be set, defaults and locks are those of that version. :meth:`FeatureGates.unsupported`
then names the gates kube-scheduler reads whose value differs from the behaviour berth
implements (kube-scheduler v1.36.3's, where berth has no branch on the gate).
"""

from __future__ import annotations

import threading

from app.featuregate_table import DEPENDENCIES, GATES, SCHEDULER_GATES, VERSIONED

__all__ = [
    "BINARY_MINOR",
    "COORDINATED_LEADER_ELECTION",
    "DEFAULT",
    "EMULATION_FLOOR_MINOR",
    "FeatureGateError",
    "FeatureGates",
    "spec_at",
]

BINARY_MINOR = 36
"""kube-scheduler v1.36's minor version: the newest version berth emulates (its own)."""
EMULATION_FLOOR_MINOR = BINARY_MINOR - 3
"""The oldest ``--emulated-version`` and ``--min-compatibility-version`` (component-base's floor)."""

Spec = tuple[bool, str, bool]
"""(default, pre-release stage, locked to default)."""
_PRE_ALPHA: Spec = (False, "PreAlpha", False)

BRANCHED = frozenset(
    {
        "SchedulerPopFromBackoffQ",
        "SchedulerAsyncAPICalls",
        "SchedulerQueueingHints",
        "DynamicResourceAllocation",
        "DRAAdminAccess",
        "DRAConsumableCapacity",
        "DRADeviceTaints",
        "DRAExtendedResource",
        "DRAPartitionableDevices",
        "NominatedNodeNameForExpectation",
        "VolumeAttributesClass",
        "PodLevelResources",
        # berth never reads the pod-level status resources this gate adds; it only matters for
        # pods with pod-level resources, so with it off (1.33) berth is kube-scheduler exactly.
        "InPlacePodLevelResourcesVerticalScaling",
        "CoordinatedLeaderElection",
        "DRAPrioritizedList",
        "DRAListTypeAttributes",
        "DRADeviceBindingConditions",
        "DRAResourceClaimDeviceStatus",
        "DRASchedulerFilterTimeout",
        "StorageCapacityScoring",
        "NodeDeclaredFeatures",
        "SchedulerAsyncPreemption",
    }
)
"""Scheduler gates berth reads and follows either way (``featuregates.DEFAULT.enabled(...)`` in the code)."""

IMPLEMENTED_OFF = frozenset({"OpportunisticBatching", "GenericWorkload", "GangScheduling"})
"""Scheduler gates whose "on" behaviour berth does not have: it behaves as kube-scheduler does with
them off (whatever the gate says; at v1.36 the benchmarks turn OpportunisticBatching off)."""


def spec_at(key: str, minor: int) -> Spec:
    """``key``'s (default, stage, locked) at emulated version 1.``minor``; PreAlpha when the gate
    has no spec that old (KeyError for an unknown gate)."""
    for spec_minor, default, stage, locked in reversed(VERSIONED[key]):
        if spec_minor <= minor:
            return default, stage, locked
    return _PRE_ALPHA


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
        self._minor = BINARY_MINOR
        self._min_compat_minor = BINARY_MINOR - 1

    def set_emulation(self, minor: int, min_compatibility_minor: int | None = None) -> None:
        """Emulate version 1.``minor`` (``--emulated-version``), before the gates are set. The
        minimum compatibility version defaults to one minor before, never under the floor (as
        component-base's ``SetEmulationVersion``); it only shows in messages (no kube gate has a
        spec that depends on it)."""
        if min_compatibility_minor is None:
            min_compatibility_minor = max(minor - 1, EMULATION_FLOOR_MINOR)
        with self._lock:
            self._minor = minor
            self._min_compat_minor = min_compatibility_minor

    @property
    def emulated_minor(self) -> int:
        """The emulated version's minor (36 unless ``--emulated-version`` said otherwise)."""
        return self._minor

    @property
    def min_compatibility_minor(self) -> int:
        """The minimum compatibility version's minor (``--min-compatibility-version``)."""
        return self._min_compat_minor

    def spec(self, key: str) -> Spec:
        """``key``'s (default, stage, locked) at the emulated version."""
        return spec_at(key, self._minor)

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
                continue  # AllAlpha / AllBeta: every version knows them, none locks them
            if key not in VERSIONED:
                raise FeatureGateError(f"unrecognized feature gate: {key}")
            default, stage, locked = self.spec(key)
            if locked and enabled != default:
                errors.append(
                    f"cannot set feature gate {key} to {str(enabled).lower()}, "
                    f"feature is locked to {str(default).lower()}"
                )
            elif stage == "PreAlpha":
                errors.append(
                    f"cannot set feature gate {key} to {str(enabled).lower()}, feature is PreAlpha at "
                    f"emulated version 1.{self._minor}, min compatibility version 1.{self._min_compat_minor}"
                )
        if errors:
            raise FeatureGateError(_aggregate(errors))
        overrides = self.overrides()
        for special, stage in _SPECIAL.items():
            if special in parsed:
                for key in VERSIONED:
                    _default, gate_stage, locked = self.spec(key)
                    if gate_stage == stage and not locked and key not in parsed:
                        overrides[key] = parsed[special]
        overrides.update({k: v for k, v in parsed.items() if k not in _SPECIAL})
        missing = dependency_errors(overrides, self._minor)
        if missing:
            raise FeatureGateError(_aggregate(missing))
        with self._lock:
            self._overrides = overrides

    def enabled(self, key: str) -> bool:
        """Whether ``key`` is on: its override, else its default (KeyError for an unknown gate)."""
        with self._lock:
            if key in self._overrides:
                return self._overrides[key]
        return spec_at(key, self._minor)[0]

    def overrides(self) -> dict[str, bool]:
        """The gates set explicitly (what ``--feature-gates`` changed), for logging."""
        with self._lock:
            return dict(self._overrides)

    def unsupported(self) -> list[str]:
        """``gate=value`` for every gate kube-scheduler reads whose value now differs from the
        behaviour berth implements: v1.36's default where berth does not branch on the gate, off
        for the features berth does not have. Only at an emulated version before v1.36: at
        v1.36 itself every accepted setting runs, as before ``--emulated-version`` existed."""
        if self._minor == BINARY_MINOR:
            return []
        wrong = []
        for key in SCHEDULER_GATES:
            if key in BRANCHED:
                continue
            implemented = False if key in IMPLEMENTED_OFF else GATES[key][0]
            value = self.enabled(key)
            if value != implemented:
                wrong.append(f"{key}={str(value).lower()}")
        return wrong

    def reset(self) -> None:
        """Back to the defaults at v1.36 (tests)."""
        with self._lock:
            self._overrides.clear()
            self._minor = BINARY_MINOR
            self._min_compat_minor = BINARY_MINOR - 1


def dependency_errors(overrides: dict[str, bool], minor: int = BINARY_MINOR) -> list[str]:
    """component-base's dependency check: an enabled gate whose dependencies are not all enabled."""

    def on(key: str) -> bool:
        return overrides.get(key, spec_at(key, minor)[0] if key in VERSIONED else False)

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
