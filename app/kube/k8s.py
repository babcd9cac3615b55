"""The official kubernetes client's configuration and connection parts, without its generated code.

berth uses the ``kubernetes`` package for what is hard to get right (kubeconfig and in-cluster
loading, TLS, client certificates, token refresh: ``Configuration``, ``ApiClient``,
``kubernetes.config``) and never its generated API classes and models. But ``import
kubernetes.client`` runs package ``__init__`` modules that import all of them: about 1300 modules,
some 90 MiB, two thirds of what ``berth run`` otherwise needs at its peak and a second of start-up.

:func:`client_modules` imports only the modules berth needs. It puts placeholder package modules
(:func:`app.lazypackage.placeholder`) for ``kubernetes``, ``kubernetes.client`` and
``kubernetes.client.models`` in ``sys.modules`` whose ``__init__`` runs only when something asks
for a name the placeholder does not have (``kubernetes.client.CoreV1Api``, say). If ``kubernetes``
was imported before (by a test, or a program embedding berth), or anything about the placeholders
fails, the package is imported the usual way.

``kubernetes.config`` imports ``requests_oauthlib`` and ``oauthlib.oauth2`` at its top for one thing:
refreshing an OIDC token (``OAuth2Session``, and an oauthlib error it catches), which most
kubeconfigs never need; ``ApiClient`` imports ``dateutil.parser`` (for the generated models) and
``multiprocessing.pool`` (for ``async_req``), which berth never uses. Placeholders stand in for
these too (:data:`_DEFERRED`), the names their importers call as forwarders that import the module
on their first call.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import TYPE_CHECKING

from app.lazypackage import placeholder

__all__ = [
    "ApiClient",
    "ConfigException",
    "Configuration",
    "client_modules",
    "load_incluster_config",
    "load_kube_config",
]

_PLACEHOLDERS = ("kubernetes", "kubernetes.client", "kubernetes.client.models")
_DEFERRED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("requests_oauthlib", ("OAuth2Session",)),
    ("oauthlib.oauth2", ()),
    ("dateutil.parser", ("parse",)),
    ("multiprocessing.pool", ("ThreadPool",)),
    ("charset_normalizer", ()),
)
"""Modules the configuration parts import at their top for what berth never does, and the names
their importers call: OIDC token refresh (``kubernetes.config``), the generated models' date
parsing and ``async_req``'s thread pool (``ApiClient``), and requests' guess of an undeclared
response encoding (``Response.apparent_encoding``; about 3 MiB with its compiled modules)."""
_READ_AT_IMPORT = {"charset_normalizer": {"__version__": "version"}}
"""Names a deferred module's importer reads at once: requests checks charset_normalizer's version."""
_installed: list[str] = []
"""The names of ``sys.modules`` that :func:`_light` filled: what to take back if it fails."""


def _deferred_placeholders() -> None:
    """Stand-ins for :data:`_DEFERRED`, each loading on first use (already imported ones are kept)."""
    for name, forwarded in _DEFERRED:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)  # imports the parent package, a light one for each
        if spec is None:
            continue  # the importer reports what is missing
        module = placeholder(spec, forwarded=forwarded, from_submodules=_READ_AT_IMPORT.get(name, {}))
        _installed.append(name)
        parent, _, child = name.rpartition(".")
        if parent:  # ``import a.b`` finding a.b in sys.modules binds ``a``: ``a.b`` must be there
            setattr(sys.modules[parent], child, module)


def _light() -> tuple[types.ModuleType, types.ModuleType]:
    top = importlib.util.find_spec("kubernetes")
    if top is None:
        raise ImportError("no kubernetes package")
    kubernetes = placeholder(top)
    # find_spec imports the parent package: each placeholder must be in place before its child's.
    client_spec = importlib.util.find_spec("kubernetes.client")
    if client_spec is None:
        raise ImportError("no kubernetes.client")
    client = placeholder(client_spec)
    kubernetes.client = client  # type: ignore[attr-defined]
    models_spec = importlib.util.find_spec("kubernetes.client.models")
    if models_spec is None:
        raise ImportError("no kubernetes.client.models")
    client.models = placeholder(models_spec)  # type: ignore[attr-defined]
    _deferred_placeholders()
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
            for name in (*_PLACEHOLDERS, *_installed, "kubernetes.config"):
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
