"""Setup of ``berth run``: build every part of the scheduler, start none (kube-scheduler's ``Setup``).

Keeping construction apart from :mod:`app.standalone.run` makes Setup testable on its own: a
:class:`Components` holds the configuration, the two clients (one for scheduling with the
``berth-scheduler`` user agent, one for events), the informers, cache, queue, engine, event
broadcaster and recorders, the scheduling loop, the leader-election configuration and the HTTP
application; nothing talks to the API server until :func:`app.standalone.run.run` starts it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app import __version__, metrics
from app import featuregates as gates
from app.api.objects import Pod
from app.backend.queue.scheduling_queue import PriorityQueue
from app.config import dump_config
from app.config.types import LeaderElectionConfig as LeaderElectionSettings
from app.config.types import SchedulerConfiguration
from app.framework.preemption.executor import AsyncRunner
from app.framework.preemption.parallelizer import VictimParallelizer
from app.framework.registry import Registry
from app.kube.actions import ApiBinder, ApiClusterActions, ApiVolumeWriter
from app.kube.client import KubeClient
from app.kube.dra import ApiClaimWriter
from app.kube.events import EventBroadcaster
from app.kube.extender import build_extenders
from app.kube.informer import PODS, InformerSet
from app.kube.leaderelection import default_identity
from app.kube.leasecandidate import LeaseCandidate
from app.kube.podstatus import PodStatusWriter
from app.scheduler.scheduler import ClusterObjects, Engine
from app.standalone.handlers import namespace_labels_lookup, scheduler_informers
from app.standalone.scheduler import Scheduler
from app.standalone.traces import DecisionTraces

__all__ = ["KUBE_BINARY_VERSION", "KUBE_EMULATION_VERSION", "USER_AGENT", "Components", "Options", "setup"]

USER_AGENT = f"berth-scheduler/{__version__}"
KUBE_BINARY_VERSION = "1.36.3"  # the kube-scheduler berth mirrors, published in its LeaseCandidate
KUBE_EMULATION_VERSION = "1.36"


@dataclass(slots=True)
class Options:
    """What Setup needs besides the configuration (flags that are not part of it)."""

    kubeconfig: str | None = (
        None  # overrides clientConnection.kubeconfig (tests; berth run folds its flag into cfg)
    )
    master: str | None = None
    identity: str = field(default_factory=default_identity)
    pod_max_in_unschedulable_pods_duration: float = 300.0  # --pod-max-in-unschedulable-pods-duration


@dataclass(slots=True)
class Components:
    """Everything ``berth run`` is made of, built and not started."""

    cfg: SchedulerConfiguration
    config_dump: dict[str, Any]
    client: KubeClient
    events_client: KubeClient
    engine: Engine
    queue: PriorityQueue
    informers: InformerSet
    broadcaster: EventBroadcaster
    scheduler: Scheduler
    traces: DecisionTraces
    identity: str
    leader_election: LeaderElectionSettings | None  # None: leaderElect is false
    coordinated: bool  # CoordinatedLeaderElection: the API server picks the leader among candidates
    candidate: LeaseCandidate | None
    preemption_parallelizer: VictimParallelizer  # the victims' evictions; shut down with the scheduler

    @property
    def delay_informers(self) -> bool:
        """Whether informers wait for leadership (``delayCacheUntilActive`` with leader election)."""
        return self.cfg.delay_cache_until_active and self.leader_election is not None


def _client(options: Options, cfg: SchedulerConfiguration, user_agent: str) -> KubeClient:
    conn = cfg.client_connection
    return KubeClient.from_config(
        options.kubeconfig or conn.kubeconfig or None,
        options.master,
        qps=conn.qps,
        burst=conn.burst,
        user_agent=user_agent,
    )


def _pod_lookup(informers: InformerSet) -> Callable[[str], Pod | None]:
    reflector = informers.reflectors[PODS.resource]

    def lookup(key: str) -> Pod | None:
        obj = reflector.get(key)
        return obj if isinstance(obj, Pod) else None

    return lookup


def setup(cfg: SchedulerConfiguration, registry: Registry, options: Options) -> Components:
    """Build the scheduler for ``cfg``; raises ``KubeError`` for an unusable cluster connection and
    ``FrameworkError`` for a profile that cannot be built."""
    client = _client(options, cfg, USER_AGENT)
    events_client = _client(options, cfg, f"{USER_AGENT}/events")
    broadcaster = EventBroadcaster(events_client)
    recorders = {p.scheduler_name: broadcaster.recorder(p.scheduler_name) for p in cfg.profiles}
    status = PodStatusWriter(client)
    objects = ClusterObjects()
    objects.dra.writer = ApiClaimWriter(client)  # DynamicResources' PreBind/PostFilter/Unreserve writes
    volume_writer = ApiVolumeWriter(client)  # VolumeBinding's PreBind
    actions = ApiClusterActions(client, lambda pod: recorders.get(pod.scheduler_name), status)
    engine = Engine(
        cfg,
        registry,
        objects=objects,
        binder=ApiBinder(client),
        cluster_actions=actions,
        extenders=build_extenders(cfg.extenders),
        volume_writer=volume_writer,
    )
    # Copies of one pod (a Deployment's replicas, scheduler_perf's pods) reuse the node-local
    # plugins' verdicts and scores of unchanged nodes; sampled cycles time every plugin in full.
    engine.algorithm.memoize_node_local = True
    engine.algorithm.time_sampled_cycles_in_full = True
    metrics.CACHE_SIZE.sizes = engine.cache.sizes
    # Victims are evicted in parallel, as kube-scheduler's Parallelizer evicts them: each one is a
    # PATCH and a DELETE the scheduling thread would otherwise wait for one after the other.
    preemption_parallelizer = VictimParallelizer()
    engine.handle.preemption_parallelizer = preemption_parallelizer
    queue = PriorityQueue.for_profiles(
        engine.profiles,
        pod_initial_backoff=float(cfg.pod_initial_backoff_seconds),
        pod_max_backoff=float(cfg.pod_max_backoff_seconds),
        pod_max_in_unschedulable_pods_duration=options.pod_max_in_unschedulable_pods_duration,
        nominator=engine.nominator,
        namespace_labels=namespace_labels_lookup(objects),
    )
    # Async preemption's API calls run in the background (its victims on the parallelizer above)
    # and an error activates the preemptor.
    engine.handle.preemption_runner = AsyncRunner()
    engine.handle.activator = queue.activate
    informers = scheduler_informers(client, engine, queue, objects)
    volume_writer.lookup_pod = _pod_lookup(informers)
    traces = DecisionTraces()
    scheduler = Scheduler(
        engine,
        queue,
        lookup_pod=_pod_lookup(informers),
        recorders=recorders,
        status=status,
        traces=traces,
        bind_workers=max(16, cfg.parallelism),
    )
    le = cfg.leader_election if cfg.leader_election.leader_elect else None
    coordinated = le is not None and gates.DEFAULT.enabled(gates.COORDINATED_LEADER_ELECTION)
    candidate = None
    if le is not None and coordinated:
        candidate = LeaseCandidate(
            client,
            namespace=le.resource_namespace,
            name=options.identity,
            lease_name=le.resource_name,
            binary_version=KUBE_BINARY_VERSION,
            emulation_version=KUBE_EMULATION_VERSION,
        )
    return Components(
        cfg=cfg,
        config_dump=dump_config(cfg),
        client=client,
        events_client=events_client,
        engine=engine,
        queue=queue,
        informers=informers,
        broadcaster=broadcaster,
        scheduler=scheduler,
        traces=traces,
        identity=options.identity,
        leader_election=le,
        coordinated=coordinated,
        candidate=candidate,
        preemption_parallelizer=preemption_parallelizer,
    )


def with_leader_election_overrides(cfg: SchedulerConfiguration, **overrides: Any) -> SchedulerConfiguration:
    """``cfg`` with the ``--leader-elect*`` flags applied (the only flags that override ``--config``)."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if not given:
        return cfg
    return dataclasses.replace(cfg, leader_election=dataclasses.replace(cfg.leader_election, **given))
