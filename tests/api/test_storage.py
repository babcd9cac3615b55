"""Storage objects: parsed once, unknown fields ignored, malformed fields reported with their path."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import orjson
import pytest

from app.api.errors import FieldError
from app.api.objects import parse_pod
from app.api.storage import (
    BINDING_IMMEDIATE,
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    match_topology_selector_terms,
    parse_csi_driver,
    parse_csi_node,
    parse_csi_storage_capacity,
    parse_persistent_volume,
    parse_persistent_volume_claim,
    parse_storage_class,
    parse_volume_attachment,
    with_changes,
)
from app.simulate.state import StateError, parse_state


def pv_dict(name: str = "pv", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def test_persistent_volume_fields() -> None:
    pv = parse_persistent_volume(
        {
            **pv_dict(
                capacity={"storage": "10Gi"},
                accessModes=["ReadWriteOnce"],
                storageClassName="local",
                claimRef={"namespace": "ns", "name": "c", "uid": "u1"},
                nodeAffinity={
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
                                ]
                            }
                        ]
                    }
                },
                csi={"driver": "d", "volumeHandle": "h", "somethingNew": 1},
                futureField={"x": 1},
            ),
            "status": {"phase": "Bound"},
        }
    )
    assert pv.capacity == Fraction(10 * 2**30)
    assert pv.storage_class_name == "local"
    assert pv.volume_mode == "Filesystem"
    assert pv.claim_ref is not None and pv.claim_ref.uid == "u1"
    assert pv.matches_node({"kubernetes.io/hostname": "n1"})
    assert not pv.matches_node({"kubernetes.io/hostname": "n2"})
    assert pv.csi is not None and (pv.csi.driver, pv.csi.volume_handle) == ("d", "h")
    assert pv.phase == "Bound"


def test_beta_storage_class_annotation_wins() -> None:
    raw = pv_dict(storageClassName="spec")
    raw["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "beta"}
    assert parse_persistent_volume(raw).storage_class_name == "beta"


def test_claim_fields() -> None:
    pvc = parse_persistent_volume_claim(
        {
            "metadata": {
                "name": "c",
                "namespace": "ns",
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
            },
            "spec": {
                "resources": {"requests": {"storage": "1Gi"}},
                "selector": {"matchLabels": {"a": "b"}},
                "volumeName": "pv",
                "volumeMode": "Block",
            },
        }
    )
    assert pvc.key == "ns/c"
    assert pvc.request == Fraction(2**30)
    assert pvc.selector is not None and pvc.selector.matches({"a": "b"})
    assert pvc.volume_mode == "Block"
    assert pvc.fully_bound()


@pytest.mark.parametrize(
    ("parse", "raw", "path"),
    [
        (parse_persistent_volume, pv_dict(capacity={"storage": "ten"}), "spec.capacity.storage"),
        (parse_persistent_volume, pv_dict(accessModes="RWO"), "spec.accessModes"),
        (parse_persistent_volume, pv_dict(claimRef=[]), "spec.claimRef"),
        (
            parse_persistent_volume_claim,
            {"metadata": {"name": "c"}, "spec": {"resources": {"requests": {"storage": True}}}},
            "spec.resources.requests.storage",
        ),
        (parse_storage_class, {"metadata": {"name": "s"}, "volumeBindingMode": "Later"}, "volumeBindingMode"),
        (
            parse_csi_node,
            {"metadata": {"name": "n"}, "spec": {"drivers": [{"name": "d", "allocatable": {"count": "x"}}]}},
            "spec.drivers[0].allocatable.count",
        ),
        (
            parse_csi_driver,
            {"metadata": {"name": "d"}, "spec": {"storageCapacity": "yes"}},
            "spec.storageCapacity",
        ),
        (parse_csi_storage_capacity, {"metadata": {"name": "c"}, "capacity": "lots"}, "capacity"),
        (parse_volume_attachment, {"metadata": {"name": "v"}, "spec": {"nodeName": 3}}, "spec.nodeName"),
        (parse_persistent_volume, {"metadata": {}}, "metadata.name"),
    ],
)
def test_malformed_fields_name_their_path(parse: Any, raw: dict[str, Any], path: str) -> None:
    with pytest.raises(FieldError) as err:
        parse(raw, "")
    assert err.value.path == path


def test_storage_class_defaults_and_topologies() -> None:
    sc = parse_storage_class({"metadata": {"name": "s"}, "provisioner": "p"})
    assert sc.volume_binding_mode == BINDING_IMMEDIATE
    wffc = parse_storage_class(
        {
            "metadata": {"name": "w"},
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}],
        }
    )
    assert wffc.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER
    assert match_topology_selector_terms(wffc.allowed_topologies, {"zone": "a"})
    assert not match_topology_selector_terms(wffc.allowed_topologies, {"zone": "c"})
    assert match_topology_selector_terms((), {})


def test_csi_objects() -> None:
    node = parse_csi_node(
        {
            "metadata": {
                "name": "n1",
                "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "a,b"},
            },
            "spec": {"drivers": [{"name": "d1", "allocatable": {"count": 2}}, {"name": "d2"}]},
        }
    )
    assert node.volume_limits() == {"d1": 2}
    assert node.migrated_plugins() == {"a", "b"}
    assert parse_csi_driver({"metadata": {"name": "d"}}).attach_required
    cap = parse_csi_storage_capacity(
        {
            "metadata": {"name": "c", "namespace": "kube-system"},
            "capacity": "10Gi",
            "maximumVolumeSize": "1Gi",
        }
    )
    assert cap.volume_limit() == Fraction(2**30)
    va = parse_volume_attachment(
        {
            "metadata": {"name": "v"},
            "spec": {"attacher": "d", "nodeName": "n", "source": {"persistentVolumeName": "pv"}},
        }
    )
    assert (va.attacher, va.node_name, va.persistent_volume_name) == ("d", "n", "pv")


def test_pod_volumes() -> None:
    pod = parse_pod(
        {
            "metadata": {"name": "p"},
            "spec": {
                "containers": [],
                "volumes": [
                    {"name": "a", "persistentVolumeClaim": {"claimName": "c", "readOnly": True}},
                    {"name": "b", "ephemeral": {"volumeClaimTemplate": {}}},
                    {"name": "c", "gcePersistentDisk": {"pdName": "disk", "readOnly": True}},
                    {"name": "d", "csi": {"driver": "inline"}},
                    {"name": "e", "emptyDir": {}},
                ],
            },
        }
    )
    sources = [(v.name, v.source) for v in pod.volumes]
    assert sources == [
        ("a", "persistentVolumeClaim"),
        ("b", "ephemeral"),
        ("c", "gcePersistentDisk"),
        ("d", "csi"),
        ("e", ""),
    ]
    assert pod.volumes[2].disk is not None and pod.volumes[2].disk.disk_id == "disk"
    with pytest.raises(FieldError) as err:
        parse_pod(
            {"metadata": {"name": "p"}, "spec": {"volumes": [{"name": "a", "persistentVolumeClaim": "c"}]}}
        )
    assert err.value.path == "spec.volumes[0].persistentVolumeClaim"


def test_with_changes_copies() -> None:
    raw = pv_dict(capacity={"storage": "1Gi"})
    changed = with_changes(raw, {"a": "b"}, claimRef={"name": "c"})
    assert changed["metadata"]["annotations"] == {"a": "b"}
    assert changed["spec"]["claimRef"] == {"name": "c"}
    assert "claimRef" not in raw["spec"] and "annotations" not in raw["metadata"]


STATE = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec: {storageClassName: local, resources: {requests: {storage: 1Gi}}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
"""


def test_state_file_accepts_storage_kinds_without_warning() -> None:
    state = parse_state(STATE, "state.yaml")
    assert state.warnings == []
    assert [o["kind"] for o in state.objects.list_cluster("StorageClass")] == ["StorageClass"]


def test_state_file_reports_malformed_storage_field() -> None:
    bad = STATE.replace("storage: 1Gi", "storage: [1]")
    with pytest.raises(StateError) as err:
        parse_state(bad, "state.yaml")
    assert str(err.value).startswith(
        "state.yaml: document 1 (PersistentVolumeClaim data): spec.resources.requests.storage: "
    )


MANAGED_FIELDS = [{"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": {"f:status": {}}}]


def test_volume_documents_keep_all_but_managed_fields() -> None:
    """A PersistentVolume and a claim keep their whole document but managedFields, for the binder's
    writes (an update without managedFields keeps the stored ones); each read is a fresh copy."""
    raw = {
        **pv_dict(capacity={"storage": "1Gi"}, csi={"driver": "d", "volumeHandle": "h"}, futureField=[1]),
        "status": {"phase": "Available"},
    }
    raw["metadata"].update(resourceVersion="7", finalizers=["kubernetes.io/pv-protection"])
    raw["metadata"]["managedFields"] = MANAGED_FIELDS
    pv = parse_persistent_volume(raw)
    expected = {**raw, "metadata": {k: v for k, v in raw["metadata"].items() if k != "managedFields"}}
    assert pv.raw == expected
    pv.raw["spec"]["futureField"].append(2)
    assert pv.raw == expected
    assert "managedFields" in raw["metadata"]  # the decoded dict is left as it was
    changed = with_changes(pv.raw, {"a": "b"}, claimRef={"name": "c"})
    assert changed["spec"]["futureField"] == [1] and changed["metadata"]["resourceVersion"] == "7"
    claim_raw = {"metadata": {"name": "c", "namespace": "ns", "managedFields": MANAGED_FIELDS}, "spec": {}}
    assert parse_persistent_volume_claim(claim_raw).raw == {
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {},
    }


def test_volumes_share_what_they_repeat() -> None:
    """Values every volume of a workload repeats are one object across volumes parsed from separate
    documents (the access modes, the class, the phase, the CSI driver, the claim's namespace, equal
    label and annotation maps)."""

    def parsed(i: int) -> Any:
        # Each document decoded on its own, as watch events are.
        text = orjson.dumps(
            {
                **pv_dict(
                    f"pv-{i}",
                    accessModes=["ReadOnlyMany"],
                    storageClassName="standard",
                    csi={"driver": "ebs.csi.aws.com", "volumeHandle": f"h{i}"},
                    claimRef={"namespace": "namespace-2", "name": f"c{i}", "uid": f"u{i}"},
                ),
                "status": {"phase": "Bound"},
            }
        )
        raw = orjson.loads(text)
        raw["metadata"]["annotations"] = {"pv.kubernetes.io/bound-by-controller": "yes"}
        return parse_persistent_volume(raw)

    a, b = parsed(1), parsed(2)
    assert a.access_modes is b.access_modes
    assert a.storage_class_name is b.storage_class_name
    assert a.phase is b.phase and a.volume_mode is b.volume_mode
    assert a.csi is not None and b.csi is not None and a.csi.driver is b.csi.driver
    assert a.claim_ref is not None and b.claim_ref is not None
    assert a.claim_ref.namespace is b.claim_ref.namespace
    assert a.labels == {} and a.labels is b.labels
    assert a.annotations == {"pv.kubernetes.io/bound-by-controller": "yes"} and a.annotations is b.annotations
    assert a.raw["spec"]["csi"] == {"driver": "ebs.csi.aws.com", "volumeHandle": "h1"}
    assert b.raw["metadata"]["name"] == "pv-2"  # packed against the first PV's document, unpacked whole


def test_a_large_document_unpacks_whole() -> None:
    """A document larger than the packing window (annotations of tens of KiB) still reads back whole."""
    raw = pv_dict("big", capacity={"storage": "1Gi"})
    raw["metadata"]["annotations"] = {f"example.com/note-{i}": "x" * 200 for i in range(100)}
    assert parse_persistent_volume(raw).raw == raw
    claim = {"metadata": {"name": "c", "namespace": "ns", "annotations": raw["metadata"]["annotations"]}}
    assert parse_persistent_volume_claim(claim).raw == claim
