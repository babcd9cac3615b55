"""Reading, decoding, defaulting and writing KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).

``load_config(path, registry)`` = read file → strict decode → v1 defaulting → validation, like
kube-scheduler's ``--config``; ``dump_config(cfg)`` writes the completed configuration the way
``kube-scheduler --write-config-to`` does.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from app.api import decoding
from app.api.errors import FieldError
from app.api.strict import API_VERSION, Obj, json_kind
from app.api.validation import (
    ConfigErrors,
    child,
    format_duration,
    invalid,
    not_supported,
    raise_errors,
    required,
)
from app.config.defaults import (
    DEFAULT_EXTENDER_TIMEOUT,
    DEFAULT_PARALLELISM,
    DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE,
    DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_BACKOFF_SECONDS,
    DEFAULT_SCHEDULER_NAME,
    default_plugins,
    enabled_plugin_names,
    merge_plugins_with_origins,
)
from app.config.types import (
    EXTENSION_POINTS,
    ClientConnectionConfig,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    LeaderElectionConfig,
    Plugin,
    PluginArgs,
    PluginCatalog,
    PluginConfig,
    Plugins,
    PluginSet,
    Profile,
    SchedulerConfiguration,
)
from app.config.validation import validate_configuration, validate_profile_plugins

__all__ = ["KIND", "ConfigFileError", "dump_config", "load_config", "parse_config", "read_config_file"]

KIND = "KubeSchedulerConfiguration"
NODE_RESOURCES_FIT = "NodeResourcesFit"
#: v1 fields of ``Plugins`` berth cannot run; accepted only when they enable nothing.
_UNSUPPORTED_POINTS = ("placementGenerate", "placementScore")
_POINT_ATTRS = dict(zip(("multiPoint", *EXTENSION_POINTS), Plugins.__dataclass_fields__, strict=True))


class ConfigFileError(Exception):
    """The configuration file cannot be read or parsed (missing, unreadable, not YAML/JSON)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


# --- reading ----------------------------------------------------------------------------------------------


def _check_duplicates(node: yaml.Node, path: str) -> None:
    """Reject duplicate mapping keys, as kube-scheduler's strict decoder does (``duplicate field "x"``)."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key == "<<" or key is None:
                continue
            if key in seen:
                raise FieldError(child(path, key), f'duplicate field "{key}"')
            seen.add(key)
            _check_duplicates(value_node, child(path, key))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_duplicates(item, f"{path}[{i}]")


def _load_yaml(text: str) -> object:
    """The first YAML document of ``text`` (None when there is none).

    kube-scheduler's decoder reads the first document of a multi-document file and ignores the rest,
    which is not even parsed, so neither is it here.
    """
    loader = decoding.DocumentLoader(text)
    try:
        with decoding.recursion_limit(decoding.YAML_RECURSION_LIMIT):
            loader.get_event()  # the stream's start
            if loader.check_event(yaml.StreamEndEvent):
                return None
            node = loader.compose_document()
            if node is None:
                return None
            _check_duplicates(node, "")
            return loader.construct_document(node)
    finally:
        loader.dispose()


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise FieldError(key, f'duplicate field "{key}"')
        out[key] = value
    return out


def read_config_file(path: str) -> Mapping[str, object]:
    """Read a YAML or JSON configuration file into a mapping.

    Raises :class:`ConfigFileError` when the file cannot be read or parsed, :class:`FieldError` when the
    document is not a single mapping or has duplicate fields.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise ConfigFileError(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigFileError(path, f"cannot read: {err}") from None
    try:
        data = _load_yaml(text)
    except RecursionError:
        raise ConfigFileError(path, f"invalid YAML: {decoding.too_deep_message('a value')}") from None
    except yaml.YAMLError as err:
        # JSON that YAML rejects (e.g. tab indentation) is still JSON.
        try:
            data = json.loads(text, object_pairs_hook=_json_pairs, parse_int=decoding.json_int)
        except RecursionError:
            raise ConfigFileError(path, f"invalid JSON: {decoding.too_deep_message('a value')}") from None
        except json.JSONDecodeError:
            raise ConfigFileError(path, f"invalid YAML: {err}") from None
    data = decoding.sanitize(data)
    if not isinstance(data, Mapping):
        got = "an empty document" if data is None else f"{json_kind(data)}"
        raise FieldError("", f"expected a KubeSchedulerConfiguration object, got {got}")
    return data


def load_config(path: str | None, registry: PluginCatalog) -> SchedulerConfiguration:
    """Load, default and validate a configuration file; ``None`` gives the all-defaults configuration."""
    raw: Mapping[str, object] = (
        {"apiVersion": API_VERSION, "kind": KIND} if path is None else read_config_file(path)
    )
    return parse_config(raw, registry)


# --- decoding ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _RawProfile:
    """A profile as decoded, before defaulting (pointer fields still None when unset)."""

    scheduler_name: str | None
    percentage: int | None
    plugins: Plugins | None
    plugin_config: list[tuple[str, object, str]] = field(default_factory=list)


def _decode_plugin_list(obj: Obj, key: str) -> list[Plugin]:
    out = []
    for p, item in obj.array(key):
        po = Obj(item, p)
        out.append(Plugin(po.string("name"), po.integer("weight")))
        po.finish()
    return out


def _decode_plugin_set(obj: Obj | None) -> PluginSet:
    if obj is None:
        return PluginSet()
    ps = PluginSet(_decode_plugin_list(obj, "enabled"), _decode_plugin_list(obj, "disabled"))
    obj.finish()
    return ps


def _decode_plugins(obj: Obj) -> Plugins:
    sets = {attr: _decode_plugin_set(obj.nested(point)) for point, attr in _POINT_ATTRS.items()}
    for point in _UNSUPPORTED_POINTS:
        ps = _decode_plugin_set(obj.nested(point))
        if ps.enabled:
            p = child(obj.at(point), "enabled[0].name")
            raise invalid(p, ps.enabled[0].name, f"berth does not support the {point} extension point")
    obj.finish()
    return Plugins(**sets)


def _decode_profile(obj: Obj) -> _RawProfile:
    plugins_obj = obj.nested("plugins")
    prof = _RawProfile(
        scheduler_name=obj.optional_string("schedulerName"),
        percentage=obj.optional_integer("percentageOfNodesToScore"),
        plugins=None if plugins_obj is None else _decode_plugins(plugins_obj),
    )
    for p, item in obj.array("pluginConfig"):
        pc = Obj(item, p)
        name = pc.string("name")
        prof.plugin_config.append((name, pc.raw_copy("args"), pc.at("args")))
        pc.finish()
    obj.finish()
    return prof


def _decode_extender(obj: Obj) -> Extender:
    tls_obj = obj.nested("tlsConfig")
    tls = None
    if tls_obj is not None:
        tls = ExtenderTLSConfig(
            insecure=tls_obj.boolean("insecure"),
            server_name=tls_obj.string("serverName"),
            cert_file=tls_obj.string("certFile"),
            key_file=tls_obj.string("keyFile"),
            ca_file=tls_obj.string("caFile"),
            cert_data=tls_obj.byte_string("certData"),
            key_data=tls_obj.byte_string("keyData"),
            ca_data=tls_obj.byte_string("caData"),
        )
        tls_obj.finish()
    managed = []
    for p, item in obj.array("managedResources"):
        mr = Obj(item, p)
        managed.append(ExtenderManagedResource(mr.string("name"), mr.boolean("ignoredByScheduler")))
        mr.finish()
    ext = Extender(
        url_prefix=obj.string("urlPrefix"),
        filter_verb=obj.string("filterVerb"),
        preempt_verb=obj.string("preemptVerb"),
        prioritize_verb=obj.string("prioritizeVerb"),
        weight=obj.integer("weight", bits=64),
        bind_verb=obj.string("bindVerb"),
        enable_https=obj.boolean("enableHTTPS"),
        tls_config=tls,
        # NewHTTPExtender writes DefaultExtenderTimeout into the configuration it was given, which
        # --write-config-to then prints: the completed configuration says 5s, not 0s.
        http_timeout=obj.duration("httpTimeout") or DEFAULT_EXTENDER_TIMEOUT,
        node_cache_capable=obj.boolean("nodeCacheCapable"),
        managed_resources=managed,
        ignorable=obj.boolean("ignorable"),
    )
    obj.finish()
    return ext


def _decode_leader_election(obj: Obj | None) -> LeaderElectionConfig:
    """Decode and default (scheduler's own defaults, then RecommendedDefaultLeaderElectionConfiguration)."""
    if obj is None:
        return LeaderElectionConfig()
    le = LeaderElectionConfig(
        leader_elect=obj.boolean("leaderElect", True),
        lease_duration=obj.duration("leaseDuration") or 15.0,
        renew_deadline=obj.duration("renewDeadline") or 10.0,
        retry_period=obj.duration("retryPeriod") or 2.0,
        resource_lock=obj.string("resourceLock") or "leases",
        resource_name=obj.string("resourceName") or "kube-scheduler",
        resource_namespace=obj.string("resourceNamespace") or "kube-system",
    )
    obj.finish()
    return le


def _decode_client_connection(obj: Obj | None) -> ClientConnectionConfig:
    """Decode and default (the scheduler's qps 50 / burst 100 / protobuf content type)."""
    if obj is None:
        return ClientConnectionConfig()
    cc = ClientConnectionConfig(
        kubeconfig=obj.string("kubeconfig"),
        accept_content_types=obj.string("acceptContentTypes"),
        content_type=obj.string("contentType") or "application/vnd.kubernetes.protobuf",
        qps=obj.number("qps") or 50.0,
        burst=obj.integer("burst") or 100,
    )
    obj.finish()
    return cc


def _check_type_meta(top: Obj) -> None:
    api_version = top.string("apiVersion")
    kind = top.string("kind")
    if not api_version:
        raise required("apiVersion")
    if api_version != API_VERSION:
        # Only v1 is registered in kube-scheduler 1.36 (the v1beta* versions were removed).
        raise not_supported("apiVersion", api_version, [API_VERSION])
    if not kind:
        raise required("kind")
    if kind != KIND:
        raise not_supported("kind", kind, [KIND])


def _decode_args(name: str, raw: object, path: str, registry: PluginCatalog) -> object:
    """Typed args via the plugin's args class (defaulted + validated); otherwise the raw value, as given.

    NodeResourcesFit's args are only decoded and defaulted here (see :func:`_validate_fit_args`).
    """
    args_type = registry.args_type(name) if registry.has(name) else None
    if args_type is None:
        return raw
    if raw is not None and not isinstance(raw, Mapping):
        raise invalid(path, raw, "expected an object")
    if name == NODE_RESOURCES_FIT and hasattr(args_type, "decode_unvalidated"):
        return args_type.decode_unvalidated(raw, path)
    return args_type.decode(raw, path)


@dataclass(slots=True)
class _CompletedProfile:
    """A defaulted profile, the errors of its args (by pluginConfig index) and, for each extension
    point, where each merged ``enabled`` entry came from in the file (None: berth's defaults)."""

    profile: Profile
    args_errors: dict[int, list[FieldError]]
    origins: dict[str, list[int | None]]


def _complete_profile(raw: _RawProfile, only_profile: bool, registry: PluginCatalog) -> _CompletedProfile:
    """setDefaults_KubeSchedulerProfile. Args that do not decode or validate leave their entry's
    args unset and are reported with the rest of validation, as kube-scheduler aggregates them."""
    defaults = default_plugins(registry)
    plugins, origins = merge_plugins_with_origins(defaults, raw.plugins)
    configs = []
    args_errors: dict[int, list[FieldError]] = {}
    for i, (name, args, path) in enumerate(raw.plugin_config):
        try:
            configs.append(PluginConfig(name, _decode_args(name, args, path, registry)))
        except FieldError as err:
            args_errors[i] = list(err.errors) if isinstance(err, ConfigErrors) else [err]
            configs.append(PluginConfig(name, None))
    existing = {pc.name for pc in configs}
    for name in enabled_plugin_names(plugins):
        if name in existing or not registry.has(name):
            continue
        args_type = registry.args_type(name)
        if args_type is not None:
            configs.append(PluginConfig(name, args_type.decode(None, "")))
    scheduler_name = raw.scheduler_name
    if scheduler_name is None:
        # Only a single profile gets the default name; validation requires a name otherwise.
        scheduler_name = DEFAULT_SCHEDULER_NAME if only_profile else ""
    profile = Profile(
        scheduler_name=scheduler_name,
        plugins=plugins,
        plugin_config=configs,
        percentage_of_nodes_to_score=raw.percentage,
    )
    return _CompletedProfile(profile, args_errors, origins)


def parse_config(raw: Mapping[str, object], registry: PluginCatalog) -> SchedulerConfiguration:
    """Strictly decode, default and validate a v1 KubeSchedulerConfiguration mapping.

    Raises :class:`FieldError` (or its multi-error subclass ``ConfigErrors``) naming the offending field.
    """
    top = Obj(raw, "")
    _check_type_meta(top)
    parallelism = top.optional_integer("parallelism")
    leader_election = _decode_leader_election(top.nested("leaderElection"))
    client_connection = _decode_client_connection(top.nested("clientConnection"))
    enable_profiling = top.optional_boolean("enableProfiling")
    enable_contention = top.optional_boolean("enableContentionProfiling")
    percentage = top.optional_integer("percentageOfNodesToScore")
    initial_backoff = top.optional_integer("podInitialBackoffSeconds", bits=64)
    max_backoff = top.optional_integer("podMaxBackoffSeconds", bits=64)
    # A null list item decodes as the zero value (Go's json decoder), e.g. ``profiles: [null]``.
    raw_profiles = [
        _decode_profile(Obj({} if item is None else item, p)) for p, item in top.array("profiles")
    ]
    extenders = [_decode_extender(Obj({} if item is None else item, p)) for p, item in top.array("extenders")]
    delay_cache = top.boolean("delayCacheUntilActive")
    top.finish()

    if not raw_profiles:
        raw_profiles = [_RawProfile(None, None, None)]
    completed = [_complete_profile(rp, len(raw_profiles) == 1, registry) for rp in raw_profiles]
    profiles = [c.profile for c in completed]
    profiling = True if enable_profiling is None else enable_profiling
    cfg = SchedulerConfiguration(
        parallelism=DEFAULT_PARALLELISM if parallelism is None else parallelism,
        leader_election=leader_election,
        client_connection=client_connection,
        enable_profiling=profiling,
        # Contention profiling defaults to on only when profiling is on.
        enable_contention_profiling=profiling if enable_contention is None else enable_contention,
        percentage_of_nodes_to_score=DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
        if percentage is None
        else percentage,
        pod_initial_backoff_seconds=DEFAULT_POD_INITIAL_BACKOFF_SECONDS
        if initial_backoff is None
        else initial_backoff,
        pod_max_backoff_seconds=DEFAULT_POD_MAX_BACKOFF_SECONDS if max_backoff is None else max_backoff,
        profiles=profiles,
        extenders=extenders,
        delay_cache_until_active=delay_cache,
    )
    raise_errors(
        validate_configuration(cfg, {i: c.args_errors for i, c in enumerate(completed) if c.args_errors})
    )
    # Then, as scheduler.New: buildExtenders (which edits NodeResourcesFit's args and opens the TLS
    # files), then each profile's framework (whose plugins validate their own args).
    raise_errors(_check_extender_tls_files(cfg.extenders))
    cfg = _with_extender_ignored_resources(cfg)
    framework_errors = _validate_fit_args(cfg, registry) + validate_profile_plugins(cfg, registry)
    raise_errors([_in_the_file(err, completed) for err in framework_errors])
    return _as_completed(cfg, registry)


_MERGED_ENTRY = re.compile(r"^profiles\[(\d+)\]\.plugins\.(\w+)\.enabled\[(\d+)\]")


def _in_the_file(err: FieldError, completed: Sequence[_CompletedProfile]) -> FieldError:
    """``err`` with a path into a merged ``enabled`` list pointing at the file's own entry instead
    (berth's merged list starts with its default plugins; the user wrote the rest)."""
    m = _MERGED_ENTRY.match(err.path)
    if m is None:
        return err
    profile, point, merged = int(m.group(1)), m.group(2), int(m.group(3))
    origins = completed[profile].origins.get(point, []) if profile < len(completed) else []
    origin = origins[merged] if merged < len(origins) else None
    if origin is None:
        return err
    return FieldError(
        f"profiles[{profile}].plugins.{point}.enabled[{origin}]" + err.path[m.end() :], err.message
    )


def _validate_fit_args(cfg: SchedulerConfiguration, registry: PluginCatalog) -> list[FieldError]:
    """NodeResourcesFit's args, validated where the plugin is enabled (``NewFit``), as kube-scheduler:
    its configuration validation never looks at them."""
    errs: list[FieldError] = []
    for i, profile in enumerate(cfg.profiles):
        if NODE_RESOURCES_FIT not in enabled_plugin_names(profile.plugins):
            continue
        for j, pc in enumerate(profile.plugin_config):
            validate = getattr(pc.args, "validate", None)
            if pc.name == NODE_RESOURCES_FIT and validate is not None:
                errs.extend(validate(f"profiles[{i}].pluginConfig[{j}].args"))
    return errs


def _check_extender_tls_files(extenders: Sequence[Extender]) -> list[FieldError]:
    """The TLS files of the extenders must be readable: kube-scheduler opens them when it builds its
    extender clients and refuses to start otherwise (``open <file>: no such file or directory``)."""
    errs: list[FieldError] = []
    for i, ext in enumerate(extenders):
        tls = ext.tls_config
        if tls is None:
            continue
        files = [
            ("certFile", tls.cert_file, tls.cert_data),
            ("keyFile", tls.key_file, tls.key_data),
            ("caFile", tls.ca_file, tls.ca_data),
        ]
        for field_name, path, data in files:
            if not path or data:
                continue
            try:
                with open(path, "rb"):
                    pass
            except OSError as err:
                reason = (err.strerror or str(err)).lower()
                errs.append(FieldError(f"extenders[{i}].tlsConfig.{field_name}", f"open {path}: {reason}"))
    return errs


def _as_completed(cfg: SchedulerConfiguration, registry: PluginCatalog) -> SchedulerConfiguration:
    """Each profile's pluginConfig as the framework keeps it (``NewFramework``): the args of the
    plugins it runs (enabled at some extension point and registered), sorted by name; the args of
    other plugins are dropped."""
    profiles = []
    for profile in cfg.profiles:
        needed = set(enabled_plugin_names(profile.plugins))
        configs = sorted(
            (
                pc
                for pc in profile.plugin_config
                if pc.name in needed and registry.has(pc.name) and pc.args is not None
            ),
            key=lambda pc: pc.name,
        )
        profiles.append(dataclasses.replace(profile, plugin_config=configs))
    return dataclasses.replace(cfg, profiles=profiles)


def _with_extender_ignored_resources(cfg: SchedulerConfiguration) -> SchedulerConfiguration:
    """``buildExtenders``: managed resources with ``ignoredByScheduler`` become every profile's
    NodeResourcesFit ``ignoredResources`` (replacing what the file gave there, as kube-scheduler).

    A profile without NodeResourcesFit args (the plugin is disabled, so defaulting added none) is
    kube-scheduler's error ``can't find NodeResourcesFitArgs in plugin config``.
    """
    ignored = [r.name for e in cfg.extenders for r in e.managed_resources if r.ignored_by_scheduler]
    if not ignored:
        return cfg
    profiles = []
    for i, profile in enumerate(cfg.profiles):
        configs = list(profile.plugin_config)
        for j, pc in enumerate(configs):
            if pc.name == NODE_RESOURCES_FIT:
                if not dataclasses.is_dataclass(pc.args) or not hasattr(pc.args, "ignored_resources"):
                    raise invalid(
                        f"profiles[{i}].pluginConfig[{j}].args",
                        type(pc.args).__name__,
                        "want args to be of type NodeResourcesFitArgs",
                    )
                args = dataclasses.replace(pc.args, ignored_resources=list(ignored))  # type: ignore[type-var]
                configs[j] = PluginConfig(pc.name, args)
                break
        else:
            raise FieldError(
                f"profiles[{i}].pluginConfig", "can't find NodeResourcesFitArgs in plugin config"
            )
        profiles.append(dataclasses.replace(profile, plugin_config=configs))
    return dataclasses.replace(cfg, profiles=profiles)


# --- writing ----------------------------------------------------------------------------------------------


def _plugin_list(plugins: list[Plugin]) -> list[dict[str, object]]:
    # Internal weights are int32, so --write-config-to always shows them (0 included).
    return [{"name": p.name, "weight": p.weight} for p in plugins]


def _plugin_set_dict(ps: PluginSet) -> dict[str, object]:
    out: dict[str, object] = {}
    if ps.disabled:
        out["disabled"] = _plugin_list(ps.disabled)
    if ps.enabled:
        out["enabled"] = _plugin_list(ps.enabled)
    return out


def _plugins_dict(plugins: Plugins) -> dict[str, object]:
    # Go's encoding/json never omits a struct, so every extension point appears, possibly as {}.
    sets: dict[str, object] = {
        point: _plugin_set_dict(getattr(plugins, attr)) for point, attr in _POINT_ATTRS.items()
    }
    for point in _UNSUPPORTED_POINTS:
        sets[point] = {}
    return dict(sorted(sets.items()))


def _args_dict(args: object) -> object:
    if isinstance(args, PluginArgs):
        return args.to_dict()
    return copy.deepcopy(args)


def _profile_dict(profile: Profile) -> dict[str, object]:
    out: dict[str, object] = {}
    if profile.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    if profile.plugin_config:
        configs = []
        for pc in profile.plugin_config:
            entry: dict[str, object] = {}
            if pc.args is not None:
                entry["args"] = _args_dict(pc.args)
            entry["name"] = pc.name
            configs.append(entry)
        out["pluginConfig"] = configs
    out["plugins"] = _plugins_dict(profile.plugins)
    out["schedulerName"] = profile.scheduler_name
    return dict(sorted(out.items()))


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")


def _extender_dict(ext: Extender) -> dict[str, object]:
    out: dict[str, object] = {"urlPrefix": ext.url_prefix, "httpTimeout": format_duration(ext.http_timeout)}
    optional: dict[str, object] = {
        "filterVerb": ext.filter_verb,
        "preemptVerb": ext.preempt_verb,
        "prioritizeVerb": ext.prioritize_verb,
        "weight": ext.weight,
        "bindVerb": ext.bind_verb,
        "enableHTTPS": ext.enable_https,
        "nodeCacheCapable": ext.node_cache_capable,
        "ignorable": ext.ignorable,
    }
    out.update({k: v for k, v in optional.items() if v})  # all `omitempty` in v1
    if ext.tls_config is not None:
        t = ext.tls_config
        tls: dict[str, object] = {
            "insecure": t.insecure,
            "serverName": t.server_name,
            "certFile": t.cert_file,
            "keyFile": t.key_file,
            "caFile": t.ca_file,
            "certData": _b64(t.cert_data) if t.cert_data else "",
            "keyData": _b64(t.key_data) if t.key_data else "",
            "caData": _b64(t.ca_data) if t.ca_data else "",
        }
        out["tlsConfig"] = dict(sorted((k, v) for k, v in tls.items() if v))
    if ext.managed_resources:
        out["managedResources"] = [
            {"name": m.name, **({"ignoredByScheduler": True} if m.ignored_by_scheduler else {})}
            for m in ext.managed_resources
        ]
    return dict(sorted(out.items()))


def dump_config(cfg: SchedulerConfiguration) -> dict[str, object]:
    """The completed configuration in v1 camelCase form, as ``kube-scheduler --write-config-to`` writes it.

    Keys are sorted like Go's YAML output; durations are Go strings (``"15s"``); every profile lists its
    plugin sets and the defaulted args of every enabled plugin that has an args type.
    """
    le, cc = cfg.leader_election, cfg.client_connection
    out: dict[str, object] = {
        "apiVersion": API_VERSION,
        "clientConnection": {
            "acceptContentTypes": cc.accept_content_types,
            "burst": cc.burst,
            "contentType": cc.content_type,
            "kubeconfig": cc.kubeconfig,
            "qps": int(cc.qps) if float(cc.qps).is_integer() else cc.qps,
        },
        "enableContentionProfiling": cfg.enable_contention_profiling,
        "enableProfiling": cfg.enable_profiling,
        "kind": KIND,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_duration(le.lease_duration),
            "renewDeadline": format_duration(le.renew_deadline),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
            "retryPeriod": format_duration(le.retry_period),
        },
        "parallelism": cfg.parallelism,
        "podInitialBackoffSeconds": cfg.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": cfg.pod_max_backoff_seconds,
        "profiles": [_profile_dict(p) for p in cfg.profiles],
    }
    if cfg.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = cfg.percentage_of_nodes_to_score
    if cfg.delay_cache_until_active:
        out["delayCacheUntilActive"] = True
    if cfg.extenders:
        out["extenders"] = [_extender_dict(e) for e in cfg.extenders]
    return dict(sorted(out.items()))
