"""Validation of the completed configuration.

Two layers, run in kube-scheduler's order:

1. :func:`validate_configuration` ports ``ValidateKubeSchedulerConfiguration`` (validation.go) plus the
   component-base client-connection and leader-election checks;
2. :func:`validate_profile_plugins` ports what kube-scheduler only finds when it builds each profile's
   framework (``NewFramework``/``profile.NewMap``): unknown plugins enabled, plugins enabled at an extension point
   they do not implement, double registration, the single queue-sort and at-least-one-bind rules, score
   weights. berth reports these at load time, with field paths.

Plugin args are validated by their own ``decode`` (see :mod:`app.plugins`), during defaulting; their
errors are listed with the rest. pluginConfig for a plugin that no registry has is accepted and
ignored, as in kube-scheduler (the framework only reads the args of the plugins it runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.api.errors import FieldError
from app.api.strict import API_VERSION
from app.api.validation import (
    child,
    duplicate,
    format_duration,
    index,
    invalid,
    is_extended_resource_name,
    label_key_errors,
    required,
)
from app.config.types import (
    Extender,
    LeaderElectionConfig,
    Plugin,
    PluginCatalog,
    Plugins,
    PluginSet,
    Profile,
    SchedulerConfiguration,
)
from app.framework.expansion import GO_TYPE, expand

__all__ = [
    "ExpandedPlugins",
    "expand_plugins",
    "validate_configuration",
    "validate_profile_plugins",
]

#: client-go ``leaderelection.JitterFactor``: NewLeaderElector requires renewDeadline > retryPeriod * 1.2.
JITTER_FACTOR = 1.2
#: validation.go ``invalidPluginsByVersion``: plugins removed by v1. Its version string is core "v1"
#: (validation.go imports k8s.io/api/core/v1 as v1), which the message repeats.
_INVALID_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
_INVALID_MSG = f'was invalid in version "v1" (KubeSchedulerConfiguration is version "{API_VERSION}")'


def _validate_leader_election(le: LeaderElectionConfig, path: str) -> list[FieldError]:
    """component-base ValidateLeaderElectionConfiguration, plus client-go's JitterFactor rule."""
    if not le.leader_elect:
        return []
    errs: list[FieldError] = []
    if le.lease_duration <= 0:
        errs.append(
            invalid(
                child(path, "leaseDuration"), format_duration(le.lease_duration), "must be greater than zero"
            )
        )
    if le.renew_deadline <= 0:
        errs.append(
            invalid(
                child(path, "renewDeadline"), format_duration(le.renew_deadline), "must be greater than zero"
            )
        )
    if le.retry_period <= 0:
        errs.append(
            invalid(child(path, "retryPeriod"), format_duration(le.retry_period), "must be greater than zero")
        )
    if le.lease_duration <= le.renew_deadline:
        # component-base reports the renewDeadline value at the leaseDuration path.
        errs.append(
            invalid(
                child(path, "leaseDuration"),
                format_duration(le.renew_deadline),
                "must be greater than `RenewDeadline`",
            )
        )
    elif le.retry_period > 0 and le.renew_deadline <= JITTER_FACTOR * le.retry_period:
        # client-go NewLeaderElector: "renewDeadline must be greater than retryPeriod*JitterFactor".
        errs.append(
            invalid(
                child(path, "renewDeadline"),
                format_duration(le.renew_deadline),
                "must be greater than retryPeriod*JitterFactor (1.2)",
            )
        )
    if not le.resource_lock:
        errs.append(required(child(path, "resourceLock")))
    if not le.resource_namespace:
        errs.append(required(child(path, "resourceNamespace")))
    if not le.resource_name:
        errs.append(required(child(path, "resourceName")))
    return errs


def _validate_percentage(value: int | None, path: str) -> list[FieldError]:
    if value is not None and (value < 0 or value > 100):
        return [invalid(path, value, "not in valid range [0-100]")]
    return []


def _validate_plugin_set_for_invalid_plugins(ps: PluginSet, path: str) -> list[FieldError]:
    return [
        invalid(index(child(path, "enabled"), i), p.name, _INVALID_MSG)
        for i, p in enumerate(ps.enabled)
        if p.name in _INVALID_PLUGINS
    ]


def _validate_profile(
    profile: Profile, path: str, args_errors: Mapping[int, Sequence[FieldError]]
) -> list[FieldError]:
    """validateKubeSchedulerProfile + validatePluginConfig; ``args_errors`` are the errors the args
    of each pluginConfig entry (by index) met when they were decoded, reported in its turn."""
    errs: list[FieldError] = []
    if not profile.scheduler_name:
        errs.append(required(child(path, "schedulerName")))
    errs.extend(
        _validate_percentage(profile.percentage_of_nodes_to_score, child(path, "percentageOfNodesToScore"))
    )
    # validation.go iterates a Go map here, so its order is random; use the Plugins field order.
    for point in GO_TYPE:
        ps = profile.plugins.point(point)
        errs.extend(_validate_plugin_set_for_invalid_plugins(ps, child(child(path, "plugins"), point)))
    seen: set[str] = set()
    for i, pc in enumerate(profile.plugin_config):
        pc_path = index(child(path, "pluginConfig"), i)
        if pc.name in seen:
            errs.append(duplicate(pc_path, pc.name))
        else:
            seen.add(pc.name)
        if pc.name in _INVALID_PLUGINS:
            errs.append(invalid(pc_path, pc.name, _INVALID_MSG))
        errs.extend(args_errors.get(i, ()))
    return errs


def _queue_sort_args(profile: Profile, name: str) -> object:
    return next((pc.args for pc in profile.plugin_config if name and pc.name == name), None)


def _validate_common_queue_sort(profiles: Sequence[Profile], path: str) -> list[FieldError]:
    """validateCommonQueueSort: every profile's explicit queueSort set (and its args) equals the first's."""
    errs: list[FieldError] = []
    canon = profiles[0].plugins.queue_sort
    name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        # Go spells this path with a capital "Enabled".
        errs.append(
            invalid(
                f"{index(path, 0)}.plugins.queueSort.Enabled",
                len(canon.enabled),
                "only one queue sort plugin can be enabled",
            )
        )
    canon_args = _queue_sort_args(profiles[0], name)
    for i in range(1, len(profiles)):
        curr = profiles[i].plugins.queue_sort
        if curr != canon:
            errs.append(
                invalid(
                    f"{index(path, i)}.plugins.queueSort",
                    _plugin_set_value(curr),
                    "must be the same for all profiles",
                )
            )
        for pc in profiles[i].plugin_config:
            if pc.name == name and pc.args != canon_args:
                errs.append(
                    invalid(
                        f"{index(path, i)}.pluginConfig.args",
                        pc.name,
                        "queueSort must be the same for all profiles",
                    )
                )
    return errs


def _plugin_set_value(ps: PluginSet) -> object:
    """A PluginSet as Go's field.Invalid would print it (JSON of the internal struct)."""
    return {
        "Enabled": [{"Name": p.name, "Weight": p.weight} for p in ps.enabled] or None,
        "Disabled": [{"Name": p.name, "Weight": p.weight} for p in ps.disabled] or None,
    }


def _validate_extenders(extenders: Sequence[Extender], path: str) -> list[FieldError]:
    """validateExtenders. An empty ``urlPrefix`` passes, as in kube-scheduler (every call to such an
    extender then fails: ``Post "/filter": unsupported protocol scheme ""``)."""
    errs: list[FieldError] = []
    binders = 0
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        ep = index(path, i)
        if ext.prioritize_verb and ext.weight <= 0:
            errs.append(invalid(child(ep, "weight"), ext.weight, "must have a positive weight applied to it"))
        if ext.bind_verb:
            binders += 1
        for j, res in enumerate(ext.managed_resources):
            np = child(index(child(ep, "managedResources"), j), "name")
            name_errs = label_key_errors(res.name)
            if name_errs:
                errs.extend(invalid(np, res.name, msg) for msg in name_errs)
            elif not is_extended_resource_name(res.name):
                errs.append(invalid(np, res.name, "is an invalid extended resource name"))
            if res.name in managed:
                errs.append(invalid(np, res.name, "duplicate extender managed resource name"))
            managed.add(res.name)
    if binders > 1:
        errs.append(
            invalid(
                path, f"found {binders} extenders implementing bind", "only one extender can implement bind"
            )
        )
    return errs


def validate_configuration(
    cfg: SchedulerConfiguration, args_errors: Mapping[int, Mapping[int, Sequence[FieldError]]] | None = None
) -> list[FieldError]:
    """ValidateKubeSchedulerConfiguration: every error, in kube-scheduler's order.

    ``args_errors`` maps a profile index to the decoding errors of its pluginConfig args (by entry
    index), listed where kube-scheduler's validation of the args lists them.
    """
    errs: list[FieldError] = []
    if cfg.client_connection.burst < 0:
        errs.append(invalid("clientConnection.burst", cfg.client_connection.burst, "must be non-negative"))
    errs.extend(_validate_leader_election(cfg.leader_election, "leaderElection"))
    if cfg.leader_election.leader_elect and cfg.leader_election.resource_lock != "leases":
        errs.append(
            invalid(
                "leaderElection.resourceLock",
                cfg.leader_election.resource_lock,
                'resourceLock value must be "leases"',
            )
        )
    if cfg.parallelism <= 0:
        errs.append(invalid("parallelism", cfg.parallelism, "should be an integer value greater than zero"))
    if not cfg.profiles:
        errs.append(required("profiles"))
    else:
        first_index: dict[str, int] = {}
        for i, profile in enumerate(cfg.profiles):
            path = index("profiles", i)
            errs.extend(_validate_profile(profile, path, (args_errors or {}).get(i, {})))
            if profile.scheduler_name in first_index:
                errs.append(
                    duplicate(
                        child(path, "schedulerName"),
                        f"profiles[{first_index[profile.scheduler_name]}].schedulerName",
                    )
                )
            first_index[profile.scheduler_name] = i
        errs.extend(_validate_common_queue_sort(cfg.profiles, "profiles"))
    errs.extend(_validate_percentage(cfg.percentage_of_nodes_to_score, "percentageOfNodesToScore"))
    if cfg.pod_initial_backoff_seconds <= 0:
        errs.append(
            invalid("podInitialBackoffSeconds", cfg.pod_initial_backoff_seconds, "must be greater than 0")
        )
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        errs.append(
            invalid(
                "podMaxBackoffSeconds",
                cfg.pod_max_backoff_seconds,
                "must be greater than or equal to PodInitialBackoffSeconds",
            )
        )
    errs.extend(_validate_extenders(cfg.extenders, "extenders"))
    return errs


@dataclass(slots=True)
class ExpandedPlugins:
    """A profile's plugins per extension point after MultiPoint expansion (``expandMultiPointPlugins``).

    ``points`` maps each extension point to its plugins in run order. For ``score`` the weights are the
    effective ones (explicit Score entry first, then MultiPoint; 0 becomes 1), as ``getValidScoreWeights``.
    """

    points: dict[str, list[Plugin]] = field(default_factory=dict)
    errors: list[FieldError] = field(default_factory=list)


def expand_plugins(plugins: Plugins, registry: PluginCatalog, path: str = "plugins") -> ExpandedPlugins:
    """Resolve MultiPoint and explicit sets into per-extension-point lists, collecting framework errors.

    The rules are the runtime's own (:func:`app.framework.expansion.expand`); this only adds paths.
    """
    sets = {
        point: (plugins.point(point).enabled, [p.name for p in plugins.point(point).disabled])
        for point in ("multiPoint", *GO_TYPE)
    }
    expansion = expand(sets, lambda name: registry.extension_points(name) if registry.has(name) else None)
    out = ExpandedPlugins()
    out.errors = [invalid(child(path, e.location), e.value, e.message) for e in expansion.errors]
    for point, names in expansion.points.items():
        weights = expansion.weights if point == "score" else {}
        out.points[point] = [Plugin(n, weights.get(n, 0)) for n in names]
    return out


def validate_profile_plugins(cfg: SchedulerConfiguration, registry: PluginCatalog) -> list[FieldError]:
    """The framework-construction checks of every profile (see the module docstring)."""
    errs: list[FieldError] = []
    first_queue_sort: tuple[str, object] | None = None
    for i, profile in enumerate(cfg.profiles):
        path = index("profiles", i)
        name = profile.scheduler_name
        expanded = expand_plugins(profile.plugins, registry, child(path, "plugins"))
        errs.extend(expanded.errors)
        queue_sort = expanded.points["queueSort"]
        if len(queue_sort) != 1:
            errs.append(
                invalid(
                    child(path, "plugins.queueSort"),
                    len(queue_sort),
                    f'only one queue sort plugin required for profile with scheduler name "{name}", but got {len(queue_sort)}',
                )
            )
        else:
            qs = queue_sort[0].name
            qs_args = _queue_sort_args(profile, qs)
            if first_queue_sort is None:
                first_queue_sort = (qs, qs_args)
            elif first_queue_sort[0] != qs:
                errs.append(
                    invalid(
                        child(path, "plugins.queueSort"),
                        qs,
                        f'different queue sort plugins for profile "{name}": "{qs}", first: "{first_queue_sort[0]}"',
                    )
                )
            elif first_queue_sort[1] != qs_args:
                errs.append(
                    invalid(
                        child(path, "pluginConfig"),
                        qs,
                        f'different queue sort plugin args for profile "{name}"',
                    )
                )
        if not expanded.points["bind"]:
            errs.append(
                required(
                    child(path, "plugins.bind"),
                    f'at least one bind plugin is needed for profile with scheduler name "{name}"',
                )
            )
    return errs
