"""NodeVolumeLimits, ported from plugins/nodevolumelimits/csi_test.go (v1.36.3): TestCSILimits with its
fixtures (getFakeCSIPVLister, getFakeCSIPVCLister, getNodeWithPodAndVolumeLimits,
buildFakeClientWithVALister) and the QueueingHint tables.

A missing claim's message is the informer lister's (``persistentvolumeclaim "x" not found``), what
kube-scheduler prints in a cluster; the Go test's fake lister says ``persistentvolumeclaims``.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.api.objects import Pod, parse_pod
from app.api.storage import parse_csi_node, parse_persistent_volume_claim, parse_volume_attachment
from app.framework.cycle_state import CycleState
from app.framework.events import HintError, QueueingHint
from app.framework.status import error, skip, unresolvable, unschedulable
from app.framework.types import NodeInfo, PodInfo
from app.plugins.nodevolumelimits.csi import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from builders import make_node, pod_dict
from plugins.storage_helpers import csi_node, handle, pv, pvc, storage_class

EBS_CSI = "ebs.csi.aws.com"
GCE_CSI = "pd.csi.storage.gke.io"
EBS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH_IN_TREE = "kubernetes.io/hostpath"
SC_NAME = "csi-sc"
NODE = "node-for-max-pd-test-1"
EXCEEDED = unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


def make(
    name: str = "", namespace: str = "default", uid: str = "", *volumes: dict[str, Any], **spec: Any
) -> Pod:
    raw = pod_dict(name or "p", namespace, volumes=list(volumes), **spec)
    if uid:
        raw["metadata"]["uid"] = uid
    return parse_pod(raw)


def claims(*names: str, pod_name: str = "p") -> Pod:
    return make(
        pod_name,
        "default",
        "",
        *({"name": f"v{i}", "persistentVolumeClaim": {"claimName": n}} for i, n in enumerate(names)),
    )


CONFIG_AND_SECRET = ({"name": "cm", "configMap": {}}, {"name": "s", "secret": {}})
running_pod = claims("csi-ebs.csi.aws.com-3", pod_name="running")
pending_volume_pod = claims("csi-4", pod_name="pending")
unbound_pvc_pod2 = claims("csi-4", pod_name="pending2")
missing_pv_pod = claims("csi-6", pod_name="missing-pv")
no_sc_pvc_pod = claims("csi-5", pod_name="no-sc")
gce_two_vol_pod = claims("csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2", pod_name="gce2")
in_tree_one_vol_pod = claims("csi-kubernetes.io/aws-ebs-0", pod_name="intree1")
in_tree_two_vol_pod = claims("csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2", pod_name="intree2")
csi_ebs_one_vol_pod = claims("csi-ebs.csi.aws.com-0", pod_name="ebs1")
csi_ebs_two_vol_pod = claims("csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2", pod_name="ebs2")
in_tree_non_migratable_one_vol_pod = claims("csi-kubernetes.io/hostpath-0", pod_name="hostpath")
ephemeral_volume_pod = make("abc", "test", "12345", {"name": "xyz", "ephemeral": {}})
ephemeral_two_volume_pod = make(
    "abc", "test", "12345II", {"name": "x", "ephemeral": {}}, {"name": "y", "ephemeral": {}}
)
in_tree_inline_vol_pod = make(
    "inline", "default", "", {"name": "a", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}
)
in_tree_inline_same_id = make(
    "inline-same", "default", "", {"name": "a", "awsElasticBlockStore": {"volumeID": "csi-ebs.csi.aws.com-1"}}
)
only_config_and_secret = make("cm", "default", "", *CONFIG_AND_SECRET)
pvc_with_config_and_secret = make(
    "cm-pvc",
    "default",
    "",
    *CONFIG_AND_SECRET,
    {"name": "c", "persistentVolumeClaim": {"claimName": "csi-ebs.csi.aws.com-0"}},
)
ephemeral_with_config_and_secret = make(
    "abc", "test", "12345", *CONFIG_AND_SECRET, {"name": "xyz", "ephemeral": {}}
)
inline_with_config_and_secret = make(
    "inline-cm",
    "default",
    "",
    *CONFIG_AND_SECRET,
    {"name": "a", "awsElasticBlockStore": {"volumeID": "aws-inline1"}},
)


def owned_claim(name: str, namespace: str, pod_name: str, uid: str | None) -> dict[str, Any]:
    raw = pvc(name, namespace, storageClassName=SC_NAME)
    if uid is not None:
        raw["metadata"]["ownerReferences"] = [
            {"kind": "Pod", "name": pod_name, "uid": uid, "controller": True}
        ]
    return raw


EPHEMERAL_CLAIM = owned_claim("abc-xyz", "test", "abc", "12345")
CONFLICTING_CLAIM = owned_claim("abc-xyz", "test", "abc", None)
EPHEMERAL_CLAIM_X = owned_claim("abc-x", "test", "abc", "12345II")
EPHEMERAL_CLAIM_Y = owned_claim("abc-y", "test", "abc", "12345II")


def fake_pvs(drivers: list[str]) -> list[dict[str, Any]]:
    """getFakeCSIPVLister("csi", drivers...)."""
    out = []
    for driver in drivers:
        for j in range(4):
            handle_name = f"csi-{driver}-{j}"
            if driver == EBS_IN_TREE:
                out.append(pv(handle_name, awsElasticBlockStore={"volumeID": handle_name}))
            elif driver == HOSTPATH_IN_TREE:
                out.append(pv(handle_name, hostPath={"path": "/tmp"}))
            else:
                out.append(pv(handle_name, csi={"driver": driver, "volumeHandle": handle_name}))
    return out


def fake_pvcs(drivers: list[str]) -> list[dict[str, Any]]:
    """getFakeCSIPVCLister("csi", SC_NAME, drivers...)."""
    out = [pvc(f"csi-{d}-{j}", volumeName=f"csi-{d}-{j}") for d in drivers for j in range(4)]
    out.append(pvc("csi-4", storageClassName=SC_NAME))
    out.append(pvc("csi-5"))
    out.append(pvc("csi-6", storageClassName=SC_NAME, volumeName="missing-in-action"))
    return out


def fake_attachments(count: int, drivers: list[str]) -> list[dict[str, Any]]:
    """buildFakeClientWithVALister."""
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": f"va-{d}-{j}"},
            "spec": {"nodeName": NODE, "attacher": d, "source": {"persistentVolumeName": f"csi-{d}-{j}"}},
        }
        for d in drivers
        for j in range(count)
    ]


def fake_csi_node(limit_source: str, limit: int, drivers: list[str]) -> dict[str, Any] | None:
    """getNodeWithPodAndVolumeLimits' CSINode, with migration of aws-ebs announced (enableMigrationOnNode)."""
    if limit_source not in ("csinode", "csinode-with-no-limit"):
        return None
    with_limits = limit_source == "csinode"
    return csi_node(
        NODE,
        {d: (limit if with_limits else None) for d in drivers},
        {"storage.alpha.kubernetes.io/migrated-plugins": EBS_IN_TREE},
    )


CASES: list[dict[str, Any]] = [
    dict(new=csi_ebs_one_vol_pod, max=2, drivers=[EBS_CSI], va=2, src="csinode", want=EXCEEDED,
         test="should count VolumeAttachments towards volume limit when no pods exist"),
    dict(new=csi_ebs_one_vol_pod, max=2, drivers=[EBS_CSI], va=1, src="csinode",
         test="should schedule pod when VolumeAttachments count does not exceed limit"),
    dict(new=csi_ebs_one_vol_pod, existing=[running_pod, csi_ebs_two_vol_pod], max=4, drivers=[EBS_CSI], src="csinode",
         test="fits when node volume limit >= new pods CSI volume"),
    dict(new=csi_ebs_one_vol_pod, existing=[running_pod, csi_ebs_two_vol_pod], max=2, drivers=[EBS_CSI], src="csinode",
         want=EXCEEDED, test="doesn't when node volume limit <= pods CSI volume"),
    dict(new=csi_ebs_one_vol_pod, existing=[running_pod, csi_ebs_two_vol_pod], max=2, drivers=[EBS_CSI],
         src="csinode-with-no-limit", test="should when driver does not support volume limits"),
    dict(new=csi_ebs_one_vol_pod, existing=[pending_volume_pod, csi_ebs_two_vol_pod], max=2, drivers=[EBS_CSI],
         src="csinode", want=EXCEEDED, test="count pending PVCs towards volume limit <= pods CSI volume"),
    dict(new=csi_ebs_one_vol_pod, existing=[pending_volume_pod, unbound_pvc_pod2, csi_ebs_two_vol_pod], max=4,
         drivers=[EBS_CSI], src="csinode", test="count multiple pending pvcs towards volume limit >= pods CSI volume"),
    dict(new=csi_ebs_one_vol_pod, existing=[missing_pv_pod, csi_ebs_two_vol_pod], max=2, drivers=[EBS_CSI],
         src="csinode", want=EXCEEDED, test="should count PVCs with invalid PV name but valid SC"),
    dict(new=csi_ebs_one_vol_pod, existing=[running_pod, no_sc_pvc_pod], max=2, drivers=[EBS_CSI], src="csinode",
         test="don't count pvcs with missing SC towards volume limit"),
    dict(new=csi_ebs_one_vol_pod, existing=[gce_two_vol_pod, csi_ebs_two_vol_pod], max=2, drivers=[EBS_CSI, GCE_CSI],
         src="csinode", want=EXCEEDED, test="count pvcs with the same type towards volume limit"),
    dict(new=gce_two_vol_pod, existing=[csi_ebs_two_vol_pod, running_pod], max=2, drivers=[EBS_CSI, GCE_CSI],
         src="csinode", test="don't count pvcs with different type towards volume limit"),
    dict(new=in_tree_one_vol_pod, existing=[in_tree_two_vol_pod], max=2, drivers=[EBS_IN_TREE, EBS_CSI],
         src="csinode", want=EXCEEDED, test="should count in-tree volumes if migration is enabled"),
    dict(new=in_tree_inline_vol_pod, existing=[in_tree_two_vol_pod], drivers=[EBS_IN_TREE, EBS_CSI], src="",
         test="nil csi node"),
    dict(new=pending_volume_pod, existing=[in_tree_two_vol_pod], max=2, drivers=[EBS_IN_TREE, EBS_CSI],
         src="csinode", want=EXCEEDED, test="should count unbound in-tree volumes if migration is enabled"),
    dict(new=in_tree_one_vol_pod, existing=[in_tree_two_vol_pod], max=2, drivers=[EBS_IN_TREE, EBS_CSI],
         src="csinode-with-no-limit", test="should not limit pod if volume used does not report limits"),
    dict(new=in_tree_non_migratable_one_vol_pod, existing=[csi_ebs_two_vol_pod], max=2,
         drivers=[HOSTPATH_IN_TREE, EBS_CSI], src="csinode", test="should not count non-migratable in-tree volumes"),
    dict(new=in_tree_inline_vol_pod, existing=[in_tree_two_vol_pod], max=2, drivers=[EBS_IN_TREE, EBS_CSI],
         src="csinode", want=EXCEEDED, test="should count in-tree inline volumes if migration is enabled"),
    dict(new=in_tree_one_vol_pod, existing=[csi_ebs_two_vol_pod], max=2, drivers=[EBS_IN_TREE, EBS_CSI],
         src="csinode", want=EXCEEDED,
         test="should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)"),
    dict(new=in_tree_inline_vol_pod, existing=[csi_ebs_two_vol_pod, in_tree_one_vol_pod], max=3,
         drivers=[EBS_IN_TREE, EBS_CSI], src="csinode", want=EXCEEDED,
         test="should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)"),
    dict(new=in_tree_inline_same_id, existing=[csi_ebs_two_vol_pod, in_tree_one_vol_pod], max=3,
         drivers=[EBS_IN_TREE, EBS_CSI], src="csinode",
         test="should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)"),
    dict(new=csi_ebs_one_vol_pod, existing=[in_tree_two_vol_pod], max=2, drivers=[EBS_IN_TREE, EBS_CSI],
         src="csinode", want=EXCEEDED,
         test="should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)"),
    dict(new=ephemeral_volume_pod, drivers=[EBS_CSI], src="csinode-with-no-limit", test="ephemeral volume missing",
         want=unresolvable('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found')),
    dict(new=ephemeral_volume_pod, extra=[CONFLICTING_CLAIM], drivers=[EBS_CSI], src="csinode-with-no-limit",
         test="ephemeral volume not owned",
         want=error("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)")),
    dict(new=ephemeral_volume_pod, extra=[EPHEMERAL_CLAIM], drivers=[EBS_CSI], src="csinode-with-no-limit",
         test="ephemeral volume unbound"),
    dict(new=ephemeral_volume_pod, extra=[EPHEMERAL_CLAIM], drivers=[EBS_CSI],
         existing=[running_pod, csi_ebs_two_vol_pod], max=2, src="csinode", want=EXCEEDED,
         test="ephemeral doesn't when node volume limit <= pods CSI volume"),
    dict(new=csi_ebs_one_vol_pod, extra=[EPHEMERAL_CLAIM_X, EPHEMERAL_CLAIM_Y], drivers=[EBS_CSI],
         existing=[running_pod, ephemeral_two_volume_pod], max=2, src="csinode", want=EXCEEDED,
         test="ephemeral doesn't when node volume limit <= pods ephemeral CSI volume"),
    dict(new=csi_ebs_one_vol_pod, extra=[EPHEMERAL_CLAIM], drivers=[EBS_CSI],
         existing=[running_pod, ephemeral_volume_pod, csi_ebs_two_vol_pod], max=3, src="csinode", want=EXCEEDED,
         test="persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume"),
    dict(new=csi_ebs_one_vol_pod, extra=[EPHEMERAL_CLAIM], drivers=[EBS_CSI],
         existing=[running_pod, ephemeral_volume_pod, csi_ebs_two_vol_pod], max=5, src="csinode",
         test="persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume"),
    dict(new=only_config_and_secret, max=2, drivers=[EBS_CSI], src="csinode", pre=skip(),
         test="skip Filter when the pod only uses secrets and configmaps"),
    dict(new=pvc_with_config_and_secret, max=2, drivers=[EBS_CSI], src="csinode",
         test="don't skip Filter when the pod has pvcs"),
    dict(new=ephemeral_with_config_and_secret, drivers=[EBS_CSI], src="csinode-with-no-limit",
         test="don't skip Filter when the pod has ephemeral volumes",
         want=unresolvable('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found')),
    dict(new=inline_with_config_and_secret, existing=[in_tree_two_vol_pod], max=2, drivers=[EBS_IN_TREE, EBS_CSI],
         src="csinode", want=EXCEEDED, test="don't skip Filter when the pod has inline migratable volumes"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c["test"] for c in CASES])
def test_csi_limits(case: dict[str, Any]) -> None:
    drivers: list[str] = case["drivers"]
    node_info = NodeInfo(make_node(NODE), [PodInfo(p) for p in case.get("existing", [])])
    raws = [
        *fake_pvs(drivers),
        *fake_pvcs(drivers),
        *case.get("extra", []),
        storage_class(SC_NAME, provisioner=drivers[0]),
        *fake_attachments(case.get("va", 0), drivers),
    ]
    node = fake_csi_node(case["src"], case.get("max", 0), drivers)
    if node is not None:
        raws.append(node)
    plugin = NodeVolumeLimits(None, handle(*raws, nodes=(node_info,)))
    state = CycleState()
    _, pre = plugin.pre_filter(state, case["new"], [node_info])
    assert pre == case.get("pre")
    if pre is None:
        assert plugin.filter(state, case["new"], node_info) == case.get("want")


def test_a_node_gaining_a_pod_is_counted_again() -> None:
    """The count of a node's pods' volumes is kept between pods only while the node is unchanged: a pod
    bound there since (a new generation) counts for the next pod's Filter."""
    node_info = NodeInfo(make_node(NODE))
    raws = [*fake_pvs([EBS_CSI]), *fake_pvcs([EBS_CSI]), fake_csi_node("csinode", 2, [EBS_CSI])]
    plugin = NodeVolumeLimits(None, handle(*raws, nodes=(node_info,)))

    def verdict(pod: Pod) -> Any:
        state = CycleState()
        plugin.pre_filter(state, pod, [node_info])
        return plugin.filter(state, pod, node_info)

    assert verdict(csi_ebs_one_vol_pod) is None
    node_info.add_pod(csi_ebs_two_vol_pod)  # two more EBS volumes on the node: the limit is 2
    assert verdict(csi_ebs_one_vol_pod) == EXCEEDED


# --- QueueingHints ----------------------------------------------------------------------------------

PLUGIN = NodeVolumeLimits(None, handle())


@pytest.mark.parametrize(
    ("name", "deleted", "want"),
    [
        ("assigned pod with a claim", make("d", "default", "", {"name": "v", "persistentVolumeClaim": {"claimName": "c"}}, nodeName="n"), QueueingHint.QUEUE),
        ("pending pod with a claim", make("d", "default", "", {"name": "v", "persistentVolumeClaim": {"claimName": "c"}}), QueueingHint.QUEUE_SKIP),
        ("assigned pod without volumes", make("d", nodeName="n"), QueueingHint.QUEUE_SKIP),
        ("assigned pod with a config map only", make("d", "default", "", *CONFIG_AND_SECRET, nodeName="n"), QueueingHint.QUEUE_SKIP),
        ("assigned pod with an inline EBS volume", make("d", "default", "", {"name": "a", "awsElasticBlockStore": {"volumeID": "x"}}, nodeName="n"), QueueingHint.QUEUE),
    ],
)  # fmt: skip
def test_hint_pod_deleted(name: str, deleted: Pod, want: QueueingHint) -> None:
    assert PLUGIN.is_schedulable_after_pod_deleted(csi_ebs_one_vol_pod, deleted, None) is want


def test_hint_claim_added() -> None:
    assert (
        PLUGIN.is_schedulable_after_claim_added(
            csi_ebs_one_vol_pod, None, parse_persistent_volume_claim(pvc("csi-ebs.csi.aws.com-0"))
        )
        is QueueingHint.QUEUE
    )
    assert (
        PLUGIN.is_schedulable_after_claim_added(
            ephemeral_volume_pod, None, parse_persistent_volume_claim(EPHEMERAL_CLAIM)
        )
        is QueueingHint.QUEUE
    )
    assert (
        PLUGIN.is_schedulable_after_claim_added(
            csi_ebs_one_vol_pod, None, parse_persistent_volume_claim(pvc("other"))
        )
        is QueueingHint.QUEUE_SKIP
    )
    assert (
        PLUGIN.is_schedulable_after_claim_added(
            csi_ebs_one_vol_pod,
            None,
            parse_persistent_volume_claim(pvc("csi-ebs.csi.aws.com-0", namespace="x")),
        )
        is QueueingHint.QUEUE_SKIP
    )


def test_hint_attachment_deleted() -> None:
    va = parse_volume_attachment(fake_attachments(1, [EBS_CSI])[0])
    assert PLUGIN.is_schedulable_after_attachment_deleted(csi_ebs_one_vol_pod, va, None) is QueueingHint.QUEUE
    assert (
        PLUGIN.is_schedulable_after_attachment_deleted(in_tree_inline_vol_pod, va, None) is QueueingHint.QUEUE
    )
    gce = parse_volume_attachment(fake_attachments(1, [GCE_CSI])[0])
    assert (
        PLUGIN.is_schedulable_after_attachment_deleted(in_tree_inline_vol_pod, gce, None)
        is QueueingHint.QUEUE_SKIP
    )
    assert (
        PLUGIN.is_schedulable_after_attachment_deleted(only_config_and_secret, va, None)
        is QueueingHint.QUEUE_SKIP
    )
    with pytest.raises(HintError):
        PLUGIN.is_schedulable_after_attachment_deleted(csi_ebs_one_vol_pod, "not-a-va", None)


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        ({"d": 1}, {"d": 2}, QueueingHint.QUEUE),
        ({"d": 2}, {"d": 2}, QueueingHint.QUEUE_SKIP),
        ({"d": 2}, {"d": 1}, QueueingHint.QUEUE_SKIP),
        ({"d": 2}, {"d": 2, "e": 1}, QueueingHint.QUEUE),
        ({"d": None}, {"d": 1}, QueueingHint.QUEUE),
    ],
)
def test_hint_csi_node_updated(
    old: dict[str, int | None], new: dict[str, int | None], want: QueueingHint
) -> None:
    got = PLUGIN.is_schedulable_after_csi_node_updated(
        csi_ebs_one_vol_pod, parse_csi_node(csi_node("n", old)), parse_csi_node(csi_node("n", new))
    )
    assert got is want
