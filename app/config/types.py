"""The completed KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``) as Python dataclasses.

These mirror kube-scheduler's *internal* config after v1 defaulting: every pointer field that defaulting
always fills is a plain value here (``parallelism: int``), and the few that stay optional in Go
(profile ``percentageOfNodesToScore``) stay ``| None``. Durations are seconds (``float``).
Field names are snake_case; :func:`app.config.load.dump_config` writes the v1 camelCase form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = [
    "EXTENSION_POINTS",
    "ArgsType",
    "ClientConnectionConfig",
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "LeaderElectionConfig",
    "Plugin",
    "PluginArgs",
    "PluginCatalog",
    "PluginConfig",
    "PluginSet",
    "Plugins",
    "Profile",
    "SchedulerConfiguration",
]

#: The extension points a plugin can implement, by their v1 field names (``Plugins`` field order).
EXTENSION_POINTS: tuple[str, ...] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)


@runtime_checkable
class PluginArgs(Protocol):
    """A decoded, defaulted and validated plugin args object (e.g. ``NodeResourcesFitArgs``)."""

    def to_dict(self) -> dict[str, object]:
        """The v1 camelCase form, with ``apiVersion`` and ``kind``."""
        ...


class ArgsType(Protocol):
    """A plugin args class: ``decode`` is a classmethod that defaults, strictly decodes and validates."""

    def decode(self, raw: Mapping[str, object] | None, path: str) -> PluginArgs:
        """Build the args from raw v1 data (``None`` = all defaults); errors are FieldErrors under ``path``."""
        ...


class PluginCatalog(Protocol):
    """What config loading needs to know about the plugin registry (implemented by the framework)."""

    def has(self, name: str) -> bool:
        """Whether a plugin called ``name`` is registered."""
        ...

    def args_type(self, name: str) -> ArgsType | None:
        """The args class of plugin ``name``, or ``None`` if it takes no typed args."""
        ...

    def extension_points(self, name: str) -> frozenset[str]:
        """The extension points (names from :data:`EXTENSION_POINTS`) plugin ``name`` implements."""
        ...


@dataclass(frozen=True, slots=True)
class Plugin:
    """A plugin enabled or disabled at an extension point.

    ``weight`` is only meaningful for score plugins; 0 means "not set" and the framework then uses 1
    (kube-scheduler's internal ``Plugin.Weight`` is an int32 with the same convention).
    """

    name: str
    weight: int = 0


@dataclass(frozen=True, slots=True)
class PluginSet:
    """Enabled and disabled plugins of one extension point; ``disabled`` may contain ``"*"``."""

    enabled: list[Plugin] = field(default_factory=list)
    disabled: list[Plugin] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Plugins:
    """One :class:`PluginSet` per extension point, plus ``multi_point``."""

    multi_point: PluginSet = field(default_factory=PluginSet)
    pre_enqueue: PluginSet = field(default_factory=PluginSet)
    queue_sort: PluginSet = field(default_factory=PluginSet)
    pre_filter: PluginSet = field(default_factory=PluginSet)
    filter: PluginSet = field(default_factory=PluginSet)
    post_filter: PluginSet = field(default_factory=PluginSet)
    pre_score: PluginSet = field(default_factory=PluginSet)
    score: PluginSet = field(default_factory=PluginSet)
    reserve: PluginSet = field(default_factory=PluginSet)
    permit: PluginSet = field(default_factory=PluginSet)
    pre_bind: PluginSet = field(default_factory=PluginSet)
    bind: PluginSet = field(default_factory=PluginSet)
    post_bind: PluginSet = field(default_factory=PluginSet)

    def point(self, name: str) -> PluginSet:
        """The set of extension point ``name`` (a v1 field name such as ``"preFilter"`` or ``"multiPoint"``)."""
        ps: PluginSet = getattr(self, _ATTR[name])
        return ps


_ATTR: dict[str, str] = {
    "multiPoint": "multi_point",
    "preEnqueue": "pre_enqueue",
    "queueSort": "queue_sort",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}


@dataclass(frozen=True, slots=True)
class PluginConfig:
    """Args for one plugin.

    ``args`` is the decoded args object for plugins with an args type, the raw v1 mapping for plugins
    without one (out-of-tree style), or ``None`` when no args were given.
    """

    name: str
    args: object = None


@dataclass(frozen=True, slots=True)
class Profile:
    """A scheduling profile (one framework instance per ``scheduler_name``)."""

    scheduler_name: str
    plugins: Plugins = field(default_factory=Plugins)
    plugin_config: list[PluginConfig] = field(default_factory=list)
    percentage_of_nodes_to_score: int | None = None

    def args_for(self, name: str) -> object:
        """The args configured for plugin ``name`` (``None`` if it has no pluginConfig entry)."""
        for pc in self.plugin_config:
            if pc.name == name:
                return pc.args
        return None


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    """component-base LeaderElectionConfiguration; durations in seconds."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@dataclass(frozen=True, slots=True)
class ClientConnectionConfig:
    """component-base ClientConnectionConfiguration."""

    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: int = 100


@dataclass(frozen=True, slots=True)
class ExtenderTLSConfig:
    """TLS settings of an extender; ``*_data`` take precedence over ``*_file``."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(frozen=True, slots=True)
class ExtenderManagedResource:
    """An extended resource an extender manages."""

    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True, slots=True)
class Extender:
    """An HTTP scheduler extender.

    ``weight`` is not defaulted. ``http_timeout`` unset or 0 becomes the extender client's
    ``DefaultExtenderTimeout`` (5s, :data:`app.config.defaults.DEFAULT_EXTENDER_TIMEOUT`) when the
    configuration is loaded: kube-scheduler's client writes it into the configuration it was given,
    so its completed configuration says 5s.
    """

    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: float = 0.0
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = field(default_factory=list)
    ignorable: bool = False


@dataclass(frozen=True, slots=True)
class SchedulerConfiguration:
    """The completed scheduler configuration (after defaulting and validation).

    ``percentage_of_nodes_to_score`` 0 means adaptive (kube-scheduler's v1 default); a profile's own value
    overrides it when set.
    """

    parallelism: int = 16
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    client_connection: ClientConnectionConfig = field(default_factory=ClientConnectionConfig)
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    percentage_of_nodes_to_score: int | None = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    profiles: list[Profile] = field(default_factory=list)
    extenders: list[Extender] = field(default_factory=list)
    delay_cache_until_active: bool = False

    def profile(self, scheduler_name: str) -> Profile | None:
        """The profile named ``scheduler_name``, if any."""
        for prof in self.profiles:
            if prof.scheduler_name == scheduler_name:
                return prof
        return None
