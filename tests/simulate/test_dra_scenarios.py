"""berth simulate with DRA: ResourceClaims, DeviceClasses and ResourceSlices in the state file are
what the DynamicResources plugin allocates from; claims written by one pod's PreBind stay allocated
for the next pods, as in a cluster."""

from __future__ import annotations

import pytest
from simulate.simhelpers import node_yaml, pod_yaml, run_explained, run_text, state_of

from app.simulate import StateError

DRA_OBJECTS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpus}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      model: {string: a100}
      numa: {int: 0}
  - name: gpu-1
    attributes:
      model: {string: h100}
      numa: {int: 1}
---
"""


def claim_yaml(name: str, selector: str = "") -> str:
    selectors = f"\n          selectors:\n          - cel: {{expression: '{selector}'}}" if selector else ""
    return f"""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: default, uid: uid-{name}}}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
          deviceClassName: gpu{selectors}
---
"""


def claiming_pod(name: str, claim: str) -> str:
    return pod_yaml(name, spec=f"  resourceClaims: [{{name: gpu, resourceClaimName: {claim}}}]\n")


def three_claims_on_two_gpus(extra: str = "") -> str:
    """n1 with two GPUs, n2 with none, and pods p1..p3 each with its own one-GPU claim (then ``extra``)."""
    return (
        node_yaml("n1")
        + node_yaml("n2")
        + DRA_OBJECTS
        + "".join(claim_yaml(c) for c in ("c1", "c2", "c3"))
        + claiming_pod("p1", "c1")
        + claiming_pod("p2", "c2")
        + claiming_pod("p3", "c3")
        + extra
    )


def test_claims_get_distinct_devices_and_a_third_pod_waits() -> None:
    records = {r.pod.name: r for r in run_text(three_claims_on_two_gpus()).records}
    assert records["p1"].node == records["p2"].node == "n1"  # n2 has no GPUs
    assert records["p3"].status == "Unschedulable"
    assert records["p3"].message == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_cel_selector_on_an_attribute_picks_the_matching_device() -> None:
    text = (
        node_yaml("n1")
        + DRA_OBJECTS
        + claim_yaml("h100", 'device.attributes["gpu.example.com"].model == "h100"')
        + claim_yaml("v100", 'device.attributes["gpu.example.com"].model == "v100"')
        + claiming_pod("wants-h100", "h100")
        + claiming_pod("wants-v100", "v100")
    )
    records = {r.pod.name: r for r in run_text(text).records}
    assert records["wants-h100"].node == "n1"
    assert records["wants-v100"].status == "Unschedulable"


def test_details_name_the_request_and_count_the_devices() -> None:
    # Two GPUs on n1: p1 and p2 take them; p3's claim then finds 2 matching and 0 free there, and
    # n2 has no device at all. A claim asking for a model nobody has matches nothing.
    text = three_claims_on_two_gpus(
        claim_yaml("v100", 'device.attributes["gpu.example.com"].model == "v100"')
        + claiming_pod("wants-v100", "v100")
    )
    records = {r.pod.name: r for r in run_explained(text).records}
    # p1 and p2 are explained after their own claims were allocated: no DRA detail for them.
    assert records["p1"].details == records["p2"].details == {}
    assert records["p3"].details == {
        "n1": [
            "claim default/c3, request gpu: requests 1 device(s) of class gpu, 2 match on the node, 0 free"
        ],
        "n2": ["claim default/c3, request gpu: no device of class gpu on the node matches"],
    }
    assert records["wants-v100"].details == {
        "n1": ["claim default/v100, request gpu: no device of class gpu on the node matches"],
        "n2": ["claim default/v100, request gpu: no device of class gpu on the node matches"],
    }


def test_details_of_a_claim_whose_requests_only_fail_together() -> None:
    # Two requests that must share the numa attribute: each alone has a free GPU, together they don't.
    claim = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: pair, namespace: default, uid: uid-pair}
spec:
  devices:
    requests:
    - {name: a, exactly: {deviceClassName: gpu}}
    - {name: b, exactly: {deviceClassName: gpu}}
    constraints:
    - {matchAttribute: gpu.example.com/numa}
---
"""
    [record] = run_explained(node_yaml("n1") + DRA_OBJECTS + claim + claiming_pod("p", "pair")).records
    assert record.status == "Unschedulable"
    assert record.details == {
        "n1": [
            "claim default/pair: each request has enough free devices alone, but not all together "
            "(a constraint, or requests competing for the same devices)"
        ]
    }


def test_pod_without_claims_reports_no_new_claims_to_deallocate() -> None:
    [record] = run_text(node_yaml("n1", cpu="1") + DRA_OBJECTS + pod_yaml("big", cpu="2")).records
    assert record.message == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_dra_objects_are_not_reported_as_unsimulated() -> None:
    state = state_of(node_yaml("n1") + DRA_OBJECTS)
    assert not [w for w in state.warnings if "DeviceClass" in w or "ResourceSlice" in w]


def test_a_malformed_slice_names_the_file_and_field() -> None:
    bad = DRA_OBJECTS.replace("numa: {int: 0}", "numa: {int: zero}")
    with pytest.raises(StateError) as err:
        state_of(node_yaml("n1") + bad)
    assert "state.yaml" in str(err.value)
    assert "ResourceSlice.spec.devices[0].attributes.numa" in str(err.value)


def test_example_state_file() -> None:
    """examples/simulate/dra-gpus.yaml, as docs/dra.md shows it: each pod's claim gets its own GPU,
    the large-memory selector the 80Gi one, and the third pod finds none left."""
    from pathlib import Path

    from simulate.simhelpers import default_setup

    from app.scheduler.scheduler import ClusterObjects
    from app.simulate import load_state, new_engine, run_simulation

    cfg, registry = default_setup()
    state = load_state(str(Path(__file__).parents[2] / "examples" / "simulate" / "dra-gpus.yaml"))
    engine = new_engine(state, cfg, registry, 1)
    records = {r.pod.name: r for r in run_simulation(state, engine).records}
    assert {name: (r.status, r.node) for name, r in records.items()} == {
        "gpu-a": ("Scheduled", "node-gpu"),
        "gpu-b": ("Scheduled", "node-gpu"),
        "gpu-c": ("Unschedulable", None),
    }
    assert isinstance(engine.objects, ClusterObjects)
    devices = {}
    for name in ("gpu-a", "gpu-b"):
        claim = engine.objects.dra.get_claim("default", name)
        assert claim is not None and claim.allocation is not None
        devices[name] = [r.device for r in claim.allocation.results]
    assert devices == {"gpu-a": ["gpu-0"], "gpu-b": ["gpu-1"]}
