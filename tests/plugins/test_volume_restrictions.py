"""VolumeRestrictions, ported from plugins/volumerestrictions/volume_restrictions_test.go (v1.36.3):
the four disk-conflict tables (one parametrized table: their cases are the same for each disk type),
TestAccessModeConflicts, and the two QueueingHint tables; plus read-only sharing and the
PreFilterExtensions that preemption uses to free a ReadWriteOncePod claim."""

from __future__ import annotations

from typing import Any

import pytest

from app.api.objects import Pod, parse_pod
from app.api.storage import parse_persistent_volume_claim
from app.framework.cycle_state import CycleState
from app.framework.events import HintError, QueueingHint
from app.framework.status import Status, skip, unresolvable, unschedulable
from app.framework.types import NodeInfo, PodInfo
from app.plugins.volumerestrictions.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from builders import make_node, make_pod, pod_dict
from plugins.storage_helpers import handle, pod_with_claims, pvc

DISKS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "gce": ({"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "bar"}}),
    "aws": ({"awsElasticBlockStore": {"volumeID": "foo"}}, {"awsElasticBlockStore": {"volumeID": "bar"}}),
    "rbd": (
        {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}},
        {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}},
    ),
    "iscsi": (
        {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}},
        {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}},
    ),
}
DISK_CONFLICT = unschedulable(ERR_REASON_DISK_CONFLICT)


def with_volume(source: dict[str, Any] | None, name: str = "p", **spec: Any) -> Pod:
    volumes = [] if source is None else [{"name": "v", **source}]
    return make_pod(name, volumes=volumes, **spec)


def run(plugin: VolumeRestrictions, pod: Pod, node_info: NodeInfo) -> tuple[Status | None, Status | None]:
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, [])
    if pre is not None:
        return pre, None  # Filter does not run after a rejecting or skipping PreFilter
    return pre, plugin.filter(state, pod, node_info)


DISK_CASES = [
    ("nothing", None, None, skip(), None),
    ("one state", None, 0, skip(), None),
    ("same state", 0, 0, None, DISK_CONFLICT),
    ("different state", 1, 0, None, None),
    ("pod with a volume that doesn't have restrictions", "emptyDir", None, skip(), None),
]


@pytest.mark.parametrize("disk", list(DISKS))
@pytest.mark.parametrize(
    ("name", "mine", "existing", "want_pre", "want"), DISK_CASES, ids=[c[0] for c in DISK_CASES]
)
def test_disk_conflicts(
    disk: str,
    name: str,
    mine: int | str | None,
    existing: int | None,
    want_pre: Status | None,
    want: Status | None,
) -> None:
    def source(which: int | str | None) -> dict[str, Any] | None:
        if which is None:
            return None
        if which == "emptyDir":
            return {"emptyDir": {}}
        assert isinstance(which, int)
        return DISKS[disk][which]

    pods = [] if existing is None else [PodInfo(with_volume(source(existing), "existing"))]
    node_info = NodeInfo(None, pods)
    assert run(VolumeRestrictions(None, handle()), with_volume(source(mine)), node_info) == (want_pre, want)


@pytest.mark.parametrize(
    ("disk", "conflict"),
    [
        ({"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}, False),
        ({"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}, True),  # EBS never shares
        ({"rbd": {"monitors": ["a"], "image": "bar", "readOnly": True}}, False),
        ({"iscsi": {"iqn": "iqn.x", "readOnly": True}}, False),
    ],
)
def test_read_only_disks_may_be_shared_except_ebs(disk: dict[str, Any], conflict: bool) -> None:
    node_info = NodeInfo(None, [PodInfo(with_volume(disk, "existing"))])
    _, got = run(VolumeRestrictions(None, handle()), with_volume(disk), node_info)
    assert got == (DISK_CONFLICT if conflict else None)


# --- ReadWriteOncePod ------------------------------------------------------------------------------

RWOP_1 = pvc("claim-with-rwop-1", accessModes=["ReadWriteOncePod"])
RWOP_2 = pvc("claim-with-rwop-2", accessModes=["ReadWriteOncePod"])
RWX = pvc("claim-with-rwx", accessModes=["ReadWriteMany"])
POD_WITH_ONE_PVC = pod_with_claims("pod-with-one-pvc", "claim-with-rwop-1", nodeName="node-1")
POD_WITH_TWO_PVCS = pod_with_claims(
    "pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2", nodeName="node-1"
)
POD_WITH_ONE_CONFLICT = pod_with_claims("pod-with-one-conflict", "claim-with-rwop-1", nodeName="node-1")
POD_WITH_TWO_CONFLICTS = pod_with_claims(
    "pod-with-two-conflicts", "claim-with-rwop-1", "claim-with-rwop-2", nodeName="node-1"
)
POD_WITH_RWX = pod_with_claims("pod-with-rwx", "claim-with-rwx", nodeName="node-1")
RWOP_CONFLICT = unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)

ACCESS_MODE_CASES: list[
    tuple[str, Pod, list[Pod], tuple[dict[str, Any], ...], Status | None, Status | None]
] = [
    ("nothing", make_pod("p"), [], (), skip(), None),
    (
        "failed to get PVC",
        POD_WITH_ONE_PVC,
        [],
        (),
        unresolvable('persistentvolumeclaim "claim-with-rwop-1" not found'),
        None,
    ),
    ("no access mode conflict", POD_WITH_ONE_PVC, [POD_WITH_RWX], (RWOP_1, RWX), skip(), None),
    (
        "access mode conflict, unschedulable",
        POD_WITH_ONE_CONFLICT,
        [POD_WITH_ONE_PVC, POD_WITH_RWX],
        (RWOP_1, RWX),
        None,
        RWOP_CONFLICT,
    ),
    (
        "two conflicts, unschedulable",
        POD_WITH_TWO_CONFLICTS,
        [POD_WITH_TWO_PVCS, POD_WITH_RWX],
        (RWOP_1, RWOP_2, RWX),
        None,
        RWOP_CONFLICT,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "existing", "claims", "want_pre", "want"),
    ACCESS_MODE_CASES,
    ids=[c[0] for c in ACCESS_MODE_CASES],
)
def test_access_mode_conflicts(
    name: str,
    pod: Pod,
    existing: list[Pod],
    claims: tuple[dict[str, Any], ...],
    want_pre: Status | None,
    want: Status | None,
) -> None:
    node_info = NodeInfo(make_node("node-1"), [PodInfo(p) for p in existing])
    plugin = VolumeRestrictions(None, handle(*claims, nodes=(node_info,)))
    assert run(plugin, pod, node_info) == (want_pre, want)


def test_preemption_dry_run_frees_the_claim() -> None:
    """RemovePod of the pod holding the RWOP claim makes the node fit; AddPod takes it back."""
    holder = PodInfo(POD_WITH_ONE_PVC)
    node_info = NodeInfo(make_node("node-1"), [holder])
    plugin = VolumeRestrictions(None, handle(RWOP_1, nodes=(node_info,)))
    state = CycleState()
    _, pre = plugin.pre_filter(state, POD_WITH_ONE_CONFLICT, [])
    assert pre is None
    assert plugin.filter(state, POD_WITH_ONE_CONFLICT, node_info) == RWOP_CONFLICT
    dry_run = state.clone()
    extensions = plugin.pre_filter_extensions()
    assert extensions.remove_pod(dry_run, POD_WITH_ONE_CONFLICT, holder, node_info) is None
    assert plugin.filter(dry_run, POD_WITH_ONE_CONFLICT, NodeInfo(make_node("node-1"))) is None
    # The original state is untouched by the dry run.
    assert plugin.filter(state, POD_WITH_ONE_CONFLICT, node_info) == RWOP_CONFLICT
    assert extensions.add_pod(dry_run, POD_WITH_ONE_CONFLICT, holder, node_info) is None
    assert plugin.filter(dry_run, POD_WITH_ONE_CONFLICT, node_info) == RWOP_CONFLICT


# --- QueueingHints ----------------------------------------------------------------------------------

PLUGIN = VolumeRestrictions(None, handle())
GCE_POD = with_volume(DISKS["gce"][0], "pod-gce")


@pytest.mark.parametrize(
    ("name", "pod", "deleted", "want"),
    [
        ("queue on disk conflict", GCE_POD, with_volume(DISKS["gce"][0], "existing"), QueueingHint.QUEUE),
        (
            "skip on different disk",
            GCE_POD,
            with_volume(DISKS["gce"][1], "existing"),
            QueueingHint.QUEUE_SKIP,
        ),
        ("queue on same claim", POD_WITH_ONE_CONFLICT, POD_WITH_ONE_PVC, QueueingHint.QUEUE),
        ("skip on other claim", POD_WITH_ONE_CONFLICT, POD_WITH_RWX, QueueingHint.QUEUE_SKIP),
        (
            "skip on another namespace, even for the same disk (kube's quirk)",
            GCE_POD,
            parse_pod(
                pod_dict("existing", "other", volumes=[{"name": "v", **DISKS["gce"][0]}], nodeName="n")
            ),
            QueueingHint.QUEUE_SKIP,
        ),
    ],
)
def test_hint_pod_deleted(name: str, pod: Pod, deleted: Pod, want: QueueingHint) -> None:
    assert PLUGIN.is_schedulable_after_pod_deleted(pod, deleted, None) is want


def test_hint_claim_added() -> None:
    assert (
        PLUGIN.is_schedulable_after_claim_added(
            POD_WITH_ONE_CONFLICT, None, parse_persistent_volume_claim(RWOP_1)
        )
        is QueueingHint.QUEUE
    )
    assert (
        PLUGIN.is_schedulable_after_claim_added(
            POD_WITH_ONE_CONFLICT, None, parse_persistent_volume_claim(RWX)
        )
        is QueueingHint.QUEUE_SKIP
    )
    other_ns = parse_persistent_volume_claim(pvc("claim-with-rwop-1", namespace="other"))
    assert (
        PLUGIN.is_schedulable_after_claim_added(POD_WITH_ONE_CONFLICT, None, other_ns)
        is QueueingHint.QUEUE_SKIP
    )
    with pytest.raises(HintError):
        PLUGIN.is_schedulable_after_claim_added(POD_WITH_ONE_CONFLICT, None, "not-a-pvc")
