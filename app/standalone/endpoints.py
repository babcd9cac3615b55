"""The HTTP endpoints of ``berth run``: kube-scheduler's, plus the "why pending" debug view.

==============================  ===============================================================
GET /healthz, /livez, /readyz   health (leader-election watchdog, shutdown, sched-handler-sync,
                                the LeaseCandidate sync under coordinated leader election, and
                                ``leader``, whose verbose line says who leads)
GET /metrics                    the scheduler's metrics
GET /metrics/resources          kube_pod_resource_request / _limit of every pod: leader only,
                                a follower answers 503 (its view may lag the leader's)
GET /configz, /version          the effective configuration, the version
GET /debug/pods/{ns}/{name}     the pod's last scheduling attempt: per-node filter verdicts and
                                per-plugin scores, in ``berth simulate -o json``'s shape
GET /ui/                        the web UI over the same traces and the cache (:mod:`app.ui.live`)
==============================  ===============================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import orjson
from fastapi import FastAPI, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from app import __version__
from app.api.objects import Pod
from app.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_hugepages, pod_limits, pod_requests
from app.kube.informer import PODS
from app.server.app import create_component_app
from app.server.health import Check
from app.server.profiling import install_profiling
from app.ui.live import UiSource, install_ui

if TYPE_CHECKING:
    from app.standalone.setup import Components

__all__ = ["PodResourcesCollector", "build_app"]

_JSON = "application/json"
_PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"
_LABELS = ["namespace", "pod", "node", "scheduler", "priority", "resource", "unit"]


def _unit(resource: str) -> str:
    if resource == CPU:
        return "cores"
    if resource in (MEMORY, "storage", EPHEMERAL_STORAGE) or is_hugepages(resource):
        return "bytes"
    if resource.startswith("attachable-volumes-"):
        return "integer"
    return ""


class PodResourcesCollector(Collector):
    """kube-scheduler's ``/metrics/resources``: each non-terminal pod's effective requests and limits."""

    def __init__(self, pods: Callable[[], list[Pod]]) -> None:
        self.pods = pods

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One sample per pod and non-zero resource."""
        requests = GaugeMetricFamily(
            "kube_pod_resource_request",
            "Resources requested by workloads on the cluster, broken down by pod. This shows the resource "
            "usage the scheduler and kubelet expect per pod for resources along with the unit for the "
            "resource if any.",
            labels=_LABELS,
        )
        limits = GaugeMetricFamily(
            "kube_pod_resource_limit",
            "Resources limit for workloads on the cluster, broken down by pod. This shows the resource "
            "usage the scheduler and kubelet expect per pod for resources along with the unit for the "
            "resource if any.",
            labels=_LABELS,
        )
        for pod in self.pods():
            if pod.node_name and pod.phase in ("Succeeded", "Failed"):
                continue
            priority = "" if pod.priority is None else str(pod.priority)
            for family, amounts in ((requests, pod_requests(pod)), (limits, pod_limits(pod))):
                for resource, value in amounts.items():
                    if value:
                        labels = [pod.namespace, pod.name, pod.node_name, pod.scheduler_name, priority]
                        family.add_metric([*labels, resource, _unit(resource)], float(value))
        yield requests
        yield limits


def build_app(
    components: Components,
    is_leader: Callable[[], bool],
    healthz_checks: Mapping[str, Check],
    readyz_checks: Mapping[str, Check],
) -> FastAPI:
    """The scheduler's HTTP application (to be wrapped in the secure handler chain)."""
    app = create_component_app(
        config_dump=components.config_dump,
        version=__version__,
        healthz_checks=healthz_checks,
        readyz_checks=readyz_checks,
    )
    if components.cfg.enable_profiling:
        install_profiling(app, contention=components.cfg.enable_contention_profiling)
    reflector = components.informers.reflectors[PODS.resource]

    def pods() -> list[Pod]:
        stored = (reflector.get(k) for k in reflector.keys())  # noqa: SIM118 (a Reflector, not a dict)
        return [p for p in stored if isinstance(p, Pod)]

    registry = CollectorRegistry(auto_describe=False)
    registry.register(PodResourcesCollector(pods))

    @app.get("/metrics/resources", tags=["debug"], summary="Pod resource metrics (leader only)")
    async def metrics_resources() -> Response:
        if not is_leader():
            body = orjson.dumps({"Error": "not the leader: resource metrics are served by the leader only"})
            return Response(body, 503, media_type=_JSON)
        return Response(generate_latest(registry), media_type=_PROMETHEUS)

    traces = components.traces

    @app.get("/debug/pods/{namespace}/{name}", tags=["debug"], summary="The pod's last scheduling decision")
    async def debug_pod(namespace: str, name: str) -> Response:
        trace = traces.explain(f"{namespace}/{name}")
        if trace is None:
            body = orjson.dumps({"Error": f"no scheduling attempt recorded for pod {namespace}/{name}"})
            return Response(body, 404, media_type=_JSON)
        return Response(orjson.dumps(trace), media_type=_JSON)

    install_ui(app, UiSource(components.engine, "run", traces.recent, traces.explain), __version__)
    return app
