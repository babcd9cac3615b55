"""GET /version and GET /configz bodies, shaped like Kubernetes components' (``version.Info``, configz)."""

from __future__ import annotations

import platform
import re
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["CONFIGZ_KEY", "configz", "version_info"]

# kube-scheduler registers its configuration as configz.New("componentconfig") (cmd/kube-scheduler/app/server.go).
CONFIGZ_KEY = "componentconfig"
"""The key /configz files the effective configuration under."""


def version_info(version: str) -> dict[str, str]:
    """``version.Info`` fields for ``version`` (``"0.1.0"`` or ``"v0.1.0"``).

    ``goVersion`` and ``compiler`` describe the Go toolchain in Kubernetes; here they name the
    Python implementation, so clients that read the usual keys still find them.
    """
    git_version = version if version.startswith("v") else f"v{version}"
    match = re.match(r"v(\d+)\.(\d+)", git_version)
    major, minor = (match.group(1), match.group(2)) if match else ("", "")
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return {
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": f"{sys.implementation.name}{platform.python_version()}",
        "compiler": sys.implementation.name,
        "platform": f"{sys.platform}/{machine}",
    }


def configz(config_dump: Mapping[str, Any]) -> dict[str, Any]:
    """The /configz body: the effective configuration under :data:`CONFIGZ_KEY`."""
    return {CONFIGZ_KEY: config_dump}
