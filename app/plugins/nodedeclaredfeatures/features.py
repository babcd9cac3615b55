"""The declared-feature registry (``k8s.io/component-helpers/nodedeclaredfeatures`` v0.36.3).

A node lists in ``status.declaredFeatures`` the features its kubelet supports; a feature says
which pods need it. Only two of v1.36.3's five features matter when scheduling a pod (the other
three are about pod updates, which the scheduler does not see); all five are listed so that a
node's declarations are understood the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.api.objects import Pod

#: The kube-scheduler version that decides which features have expired (``MaxVersion``).
COMPONENT_VERSION = (1, 36, 3)

RESTART_ALL_CONTAINERS_ACTION = "RestartAllContainers"


def _never(pod: Pod) -> bool:
    """A feature that only matters for pod updates (in-place resize, websockets)."""
    return False


def _restarts_all_containers(pod: Pod) -> bool:
    """``restartallcontainers``: a container (regular or init) with a RestartAllContainers rule."""
    return any(
        action == RESTART_ALL_CONTAINERS_ACTION
        for c in (*pod.containers, *pod.init_containers)
        for action in c.restart_rule_actions
    )


def _user_namespace_with_host_network(pod: Pod) -> bool:
    """``usernamespaceshostnetwork``: hostNetwork together with hostUsers false."""
    return pod.host_network and pod.host_users is False


@dataclass(frozen=True, slots=True)
class Feature:
    """One declared feature (``types.Feature``): its name, which pods need it, until which version."""

    name: str
    infer_for_scheduling: Callable[[Pod], bool]
    max_version: tuple[int, int, int] | None = None


ALL_FEATURES: tuple[Feature, ...] = (
    Feature("RestartAllContainersOnContainerExits", _restarts_all_containers),
    Feature("InPlacePodLevelResourcesVerticalScaling", _never),
    Feature("ExtendWebSocketsToKubelet", _never),
    Feature("InPlacePodVerticalScalingInitContainers", _never),
    Feature("UserNamespacesHostNetworkSupport", _user_namespace_with_host_network),
)


class FeatureRegistry:
    """The features known to the scheduler, sorted by name (``ndf.Framework``)."""

    def __init__(self, features: Iterable[Feature] = ALL_FEATURES) -> None:
        self.features = tuple(sorted(features, key=lambda f: f.name))

    def infer_for_pod_scheduling(
        self, pod: Pod, target_version: tuple[int, int, int] = COMPONENT_VERSION
    ) -> frozenset[str]:
        """The features ``pod`` needs from its node (``InferForPodScheduling``).

        A feature whose ``max_version`` is older than ``target_version`` is part of every node
        by now and is no longer required.
        """
        return frozenset(
            f.name
            for f in self.features
            if (f.max_version is None or target_version <= f.max_version) and f.infer_for_scheduling(pod)
        )
