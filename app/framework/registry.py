"""Plugin registry: name → plugin class, for in-tree and out-of-tree plugins.

Out-of-tree plugins are plain Python classes deriving from :class:`~app.framework.interfaces.Plugin`,
registered under their ``name`` from a module (``--plugin-module``) or from the entry-point
group ``berth.plugins``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable, Iterator
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

from app.framework.interfaces import Plugin, extension_points_of

ENTRY_POINT_GROUP = "berth.plugins"


class RegistryError(ValueError):
    """A plugin could not be registered (duplicate name, not a plugin, import failure)."""


class Registry:
    """Plugin classes by name. Implements the configuration loader's ``PluginCatalog``."""

    def __init__(self, plugins: Iterable[type[Plugin]] = ()) -> None:
        self._plugins: dict[str, type[Plugin]] = {}
        self._sources: dict[str, str] = {}
        for p in plugins:
            self.register(p)

    def register(self, plugin: type[Plugin], source: str = "in-tree") -> None:
        """Add a plugin class under its ``name``; ``source`` says where it came from, for messages
        about a second plugin of the same name (``in-tree``, ``entry point "x" (mod:Class)``, ...)."""
        if not (inspect.isclass(plugin) and issubclass(plugin, Plugin)):
            raise RegistryError(f"{plugin!r} is not a subclass of app.framework.interfaces.Plugin")
        if not plugin.name:
            raise RegistryError(f"plugin class {plugin.__qualname__} has no name")
        if plugin.name in self._plugins and self._plugins[plugin.name] is not plugin:
            raise RegistryError(
                f'a plugin named "{plugin.name}" already exists (from {self._sources[plugin.name]}); '
                f"{source} registers another"
            )
        if not extension_points_of(plugin):
            raise RegistryError(f'plugin "{plugin.name}" implements no extension point')
        self._plugins[plugin.name] = plugin
        self._sources.setdefault(plugin.name, source)

    def merge(self, other: Registry) -> Registry:
        """A new registry with both sets of plugins."""
        merged = Registry()
        for registry in (self, other):
            for name, p in registry._plugins.items():
                merged.register(p, registry._sources[name])
        return merged

    def get(self, name: str) -> type[Plugin]:
        """The plugin class named ``name`` (KeyError if unknown)."""
        return self._plugins[name]

    def has(self, name: str) -> bool:
        """Whether a plugin is registered under ``name``."""
        return name in self._plugins

    def args_type(self, name: str) -> Any:
        """The plugin's args class, or None."""
        return self._plugins[name].args_type

    def extension_points(self, name: str) -> frozenset[str]:
        """The extension points the plugin implements (config field names)."""
        return extension_points_of(self._plugins[name])

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._plugins)

    def __iter__(self) -> Iterator[type[Plugin]]:
        return iter(self._plugins.values())

    def load_module(self, module_name: str) -> None:
        """Register the plugins of a module: its ``PLUGINS`` list, else every Plugin class it defines."""
        try:
            module = importlib.import_module(module_name)
        except Exception as err:  # an import error in user code must not become a traceback
            raise RegistryError(f'cannot import plugin module "{module_name}": {err}') from err
        for plugin in _module_plugins(module):
            self.register(plugin, f"--plugin-module {module_name}")

    def load_entry_points(self) -> None:
        """Register plugin classes advertised in the ``berth.plugins`` entry-point group."""
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                loaded = ep.load()
            except Exception as err:
                raise RegistryError(f'cannot load entry point "{ep.name}" ({ep.value}): {err}') from err
            plugins = _module_plugins(loaded) if isinstance(loaded, ModuleType) else [loaded]
            for plugin in plugins:
                self.register(plugin, f'entry point "{ep.name}" ({ep.value})')


def _module_plugins(module: ModuleType) -> list[type[Plugin]]:
    declared = getattr(module, "PLUGINS", None)
    if declared is not None:
        return list(declared)
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, Plugin) and obj.__module__ == module.__name__ and obj.name
    ]
