"""The official kubernetes client's configuration and connection parts, without its generated code.

berth uses the ``kubernetes`` package for what is hard to get right (kubeconfig and in-cluster
loading, TLS, client certificates, token refresh: ``Configuration``, ``ApiClient``,
``kubernetes.config``) and never its generated API classes and models. But ``import
kubernetes.client`` runs package ``__init__`` modules that import all of them: about 1300 modules,
some 90 MiB, two thirds of what ``berth run`` otherwise needs at its peak and a second of start-up.

:func:`client_modules` imports only the modules berth needs. It puts placeholder package modules
for ``kubernetes``, ``kubernetes.client`` and ``kubernetes.client.models`` in ``sys.modules``
(the real directories, so their submodules import as usual) whose ``__init__`` runs only when
something asks for a name the placeholder does not have (``kubernetes.client.CoreV1Api``, say):
code that wants the whole package still gets it, later. If ``kubernetes`` was imported before
(by a test, or a program embedding berth), or anything about the placeholders fails, the package
is imported the usual way.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from importlib.machinery import ModuleSpec
from typing import TYPE_CHECKING, Any

__all__ = [
    "ApiClient",
    "ConfigException",
    "Configuration",
    "client_modules",
    "load_incluster_config",
    "load_kube_config",
]

_PLACEHOLDERS = ("kubernetes", "kubernetes.client", "kubernetes.client.models")


def _placeholder(spec: ModuleSpec) -> types.ModuleType:
    """A package module for ``spec`` whose ``__init__`` runs on the first name it lacks."""
    name = spec.name
    module = types.ModuleType(name)
    module.__path__ = list(spec.submodule_search_locations or ())
    module.__spec__ = spec
    module.__package__ = name
    module.__file__ = spec.origin
    module.__loader__ = spec.loader
    initialized = False

    def __getattr__(attr: str) -> Any:
        nonlocal initialized
        if initialized:  # the real __init__ is running, or ran and did not define ``attr``
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        if not attr.startswith("__") and importlib.util.find_spec(f"{name}.{attr}") is not None:
            return importlib.import_module(f"{name}.{attr}")  # a submodule: no need for the rest
        initialized = True
        assert spec.loader is not None
        spec.loader.exec_module(module)  # the package as it really is, into the same module
        return getattr(module, attr)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = module
    return module


def _light() -> tuple[types.ModuleType, types.ModuleType]:
    top = importlib.util.find_spec("kubernetes")
    if top is None:
        raise ImportError("no kubernetes package")
    kubernetes = _placeholder(top)
    # find_spec imports the parent package: each placeholder must be in place before its child's.
    client_spec = importlib.util.find_spec("kubernetes.client")
    if client_spec is None:
        raise ImportError("no kubernetes.client")
    client = _placeholder(client_spec)
    kubernetes.client = client  # type: ignore[attr-defined]
    models_spec = importlib.util.find_spec("kubernetes.client.models")
    if models_spec is None:
        raise ImportError("no kubernetes.client.models")
    client.models = _placeholder(models_spec)  # type: ignore[attr-defined]
    from kubernetes.client.api_client import ApiClient
    from kubernetes.client.configuration import Configuration

    # What kubernetes.config imports from kubernetes.client, and what berth uses of it.
    client.ApiClient = ApiClient  # type: ignore[attr-defined]
    client.Configuration = Configuration  # type: ignore[attr-defined]
    import kubernetes.config as config

    return client, config


def client_modules() -> tuple[types.ModuleType, types.ModuleType]:
    """``(kubernetes.client, kubernetes.config)``, the generated code left out when still possible."""
    if "kubernetes" not in sys.modules:
        try:
            return _light()
        except Exception:  # a kubernetes release laid out differently: import it whole
            for name in (*_PLACEHOLDERS, "kubernetes.config"):
                sys.modules.pop(name, None)
    import kubernetes.client
    import kubernetes.config

    return kubernetes.client, kubernetes.config


if TYPE_CHECKING:
    from kubernetes.client import ApiClient, Configuration
    from kubernetes.config import ConfigException, load_incluster_config, load_kube_config
else:
    _client, _config = client_modules()
    ApiClient = _client.ApiClient
    Configuration = _client.Configuration
    ConfigException = _config.ConfigException
    load_kube_config = _config.load_kube_config
    load_incluster_config = _config.load_incluster_config
