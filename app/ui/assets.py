"""The UI's files, shipped as package data under ``app/ui/assets`` (pyproject's wheel includes them)."""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["ASSET_TYPES", "asset_bytes", "asset_text"]

#: Every asset the page loads, with its media type; nothing else is served from ``/ui/assets/``.
ASSET_TYPES: dict[str, str] = {
    "index.html": "text/html; charset=utf-8",
    "berth-ui.js": "text/javascript; charset=utf-8",
    "berth-ui.css": "text/css; charset=utf-8",
}


@cache
def asset_bytes(name: str) -> bytes:
    """The content of asset ``name`` (one of :data:`ASSET_TYPES`); KeyError for any other name."""
    if name not in ASSET_TYPES:
        raise KeyError(name)
    return resources.files(__package__).joinpath("assets", name).read_bytes()


def asset_text(name: str) -> str:
    """Asset ``name`` as text."""
    return asset_bytes(name).decode()
