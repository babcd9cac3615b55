"""Packages whose ``__init__`` runs only when needed: import a few submodules of a large package
without what its ``__init__`` imports.

Some dependencies' ``__init__`` modules import far more than berth uses: ``kubernetes.client``'s every
generated API class and model (:mod:`app.kube.k8s`), ``uvicorn``'s command line and with it click
(:mod:`app.server.uvicorn_parts`). :func:`placeholder` puts a stand-in package module in
``sys.modules`` (the real directory, so its submodules import as usual) whose ``__init__`` runs only
when something asks for a name the stand-in does not have: code that wants the whole package still
gets it, later.

A package imported only for a name it defines (``from requests_oauthlib import OAuth2Session``) can
be put off too when the importer only ever calls that name: ``forwarded`` names are stand-ins that
load the package on their first call and call the real one; a name its importer only reads at once
(a ``__version__`` it checks) can be read from the submodule that defines it, without the rest.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from importlib.machinery import ModuleSpec
from types import MappingProxyType
from typing import Any

__all__ = ["placeholder"]


def placeholder(
    spec: ModuleSpec, forwarded: Sequence[str] = (), from_submodules: Mapping[str, str] = MappingProxyType({})
) -> types.ModuleType:
    """A package module for ``spec`` whose ``__init__`` runs on the first name it lacks, installed
    in ``sys.modules`` under ``spec.name``.

    Each of ``forwarded`` is a callable stand-in until then: calling it runs ``__init__`` (which
    replaces the stand-in with the real name in the module) and calls the real one. Only for names
    their importers call, never subclass or compare. Each name of ``from_submodules`` is set at once
    from the submodule it maps to, as the package's ``__init__`` sets it (``{"__version__":
    "version"}``: the version an importer checks, read without the rest of the package).
    """
    name = spec.name
    module = types.ModuleType(name)
    package = spec.submodule_search_locations is not None
    if package:
        module.__path__ = list(spec.submodule_search_locations or ())
    module.__spec__ = spec
    module.__package__ = name if package else name.rpartition(".")[0]
    module.__file__ = spec.origin
    module.__loader__ = spec.loader
    initialized = False

    def __getattr__(attr: str) -> Any:
        nonlocal initialized
        if initialized or attr == "__path__":
            # the real __init__ is running, or ran and did not define ``attr``; or the import
            # system asks whether a plain module is a package (``from module import name``)
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        if package and not attr.startswith("__") and importlib.util.find_spec(f"{name}.{attr}") is not None:
            return importlib.import_module(f"{name}.{attr}")  # a submodule: no need for the rest
        initialized = True
        assert spec.loader is not None
        spec.loader.exec_module(module)  # the package as it really is, into the same module
        return getattr(module, attr)

    def forwarder(attr: str) -> Callable[..., Any]:
        def forward(*args: Any, **kwargs: Any) -> Any:
            nonlocal initialized
            if not initialized:
                initialized = True
                assert spec.loader is not None
                spec.loader.exec_module(module)
            return getattr(module, attr)(*args, **kwargs)

        forward.__name__ = forward.__qualname__ = attr
        return forward

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    for attr in forwarded:
        setattr(module, attr, forwarder(attr))
    sys.modules[name] = module
    for attr, submodule in from_submodules.items():
        setattr(module, attr, getattr(importlib.import_module(f"{name}.{submodule}"), attr))
    return module
