"""Profiles: one Framework per configured schedulerName (``pkg/scheduler/profile``)."""

from __future__ import annotations

import re

from app.config.types import Profile, SchedulerConfiguration
from app.framework.interfaces import EXTENSION_POINTS, Handle
from app.framework.registry import Registry
from app.framework.runtime import Framework, FrameworkError, PluginRef, ProfileSpec


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def profile_spec(profile: Profile) -> ProfileSpec:
    """The runtime's view of a configured profile."""
    plugins = {}
    for point in ("multiPoint", *EXTENSION_POINTS):
        plugin_set = getattr(profile.plugins, _snake(point))
        plugins[point] = (
            [PluginRef(p.name, p.weight) for p in plugin_set.enabled],
            [p.name for p in plugin_set.disabled],
        )
    return ProfileSpec(
        scheduler_name=profile.scheduler_name,
        plugins=plugins,
        plugin_args={pc.name: pc.args for pc in profile.plugin_config},
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
    )


def build_profiles(cfg: SchedulerConfiguration, registry: Registry, handle: Handle) -> dict[str, Framework]:
    """A Framework per profile, keyed by schedulerName; raises FrameworkError naming the profile."""
    out: dict[str, Framework] = {}
    for i, profile in enumerate(cfg.profiles):
        try:
            out[profile.scheduler_name] = Framework(profile_spec(profile), registry, handle)
        except FrameworkError as err:
            raise FrameworkError(f"profiles[{i}] ({profile.scheduler_name}): {err}") from err
    return out
