"""Loading KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) with kube-scheduler v1.36.3 semantics.

Public API: :func:`load_config`, :func:`parse_config`, :func:`dump_config`, :class:`ConfigFileError`, the
dataclasses of :mod:`app.config.types` and the :class:`PluginCatalog` protocol the plugin registry
implements.
"""

from app.api.validation import ConfigErrors
from app.config.defaults import (
    DEFAULT_EXTENDER_TIMEOUT,
    DEFAULT_SCHEDULER_NAME,
    KUBE_SCHEDULER_DEFAULT_PLUGINS,
)
from app.config.load import ConfigFileError, dump_config, load_config, parse_config, read_config_file
from app.config.types import (
    EXTENSION_POINTS,
    ArgsType,
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
from app.config.validation import ExpandedPlugins, expand_plugins

__all__ = [
    "DEFAULT_EXTENDER_TIMEOUT",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "KUBE_SCHEDULER_DEFAULT_PLUGINS",
    "ArgsType",
    "ClientConnectionConfig",
    "ConfigErrors",
    "ConfigFileError",
    "ExpandedPlugins",
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
    "dump_config",
    "expand_plugins",
    "load_config",
    "parse_config",
    "read_config_file",
]
