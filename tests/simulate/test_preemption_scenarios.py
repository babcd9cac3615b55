"""berth simulate with preemption: victims leave, the preemptor lands on its nominated node, PDBs count."""

from __future__ import annotations

from app.simulate import to_json_dict
from tests.simulate.simhelpers import node_yaml, pod_yaml, run_explained, run_text

CLASSES = (
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\n"
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 10\n---\n"
)


def running(name: str, node: str, cpu: str, cls: str = "low", labels: str = "{}") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, labels: {labels}}}\n"
        f"spec:\n  nodeName: {node}\n  priorityClassName: {cls}\n"
        f'  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]\n---\n'
    )


PDB_DB = (
    "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: default}\n"
    "spec: {selector: {matchLabels: {app: db}}}\nstatus: {disruptionsAllowed: 0}\n---\n"
)


def db_and_web_on_two_nodes(pending: str) -> str:
    """n1 full with db-0 (a PDB allows no disruption), n2 full with web-0 (no PDB), then ``pending``."""
    return (
        CLASSES
        + PDB_DB
        + node_yaml("n1", cpu="1")
        + node_yaml("n2", cpu="1")
        + running("db-0", "n1", "1", labels="{app: db}")
        + running("web-0", "n2", "1", labels="{app: web}")
        + pending
    )


def test_high_priority_pod_preempts_lower_priority_ones() -> None:
    text = (
        CLASSES
        + node_yaml("n1", cpu="2")
        + running("low-1", "n1", "1")
        + running("low-2", "n1", "1")
        + pod_yaml("urgent", cpu="2", spec="  priorityClassName: high\n")
    )
    result = run_text(text)
    (record,) = result.records
    assert (record.status, record.node, record.nominated_node) == ("Scheduled", "n1", "n1")
    doc = to_json_dict(result)["pods"][0]
    assert doc["nominatedNode"] == "n1"
    assert sorted(doc["victims"]) == ["default/low-1", "default/low-2"]
    assert doc["status"] == "Scheduled" and doc["message"] == ""


def test_pdb_protected_pod_is_not_chosen_while_another_candidate_exists() -> None:
    text = db_and_web_on_two_nodes(pod_yaml("urgent", cpu="1", spec="  priorityClassName: high\n"))
    for seed in range(5):  # whatever the random offset, the PDB decides
        (record,) = run_text(text, seed=seed).records
        assert (record.status, record.node) == ("Scheduled", "n2")
        assert [v.key for v in record.victims] == ["default/web-0"]


def test_no_preemption_fields_are_empty_and_table_names_victims() -> None:
    text = (
        CLASSES
        + node_yaml("n1", cpu="1")
        + running("low", "n1", "1")
        + pod_yaml("a", cpu="1", spec="  priorityClassName: high\n")
    )
    text += pod_yaml("b", cpu="1", spec="  priorityClassName: low\n")
    result = run_text(text)
    a, b = to_json_dict(result)["pods"]
    assert a["victims"] == ["default/low"] and a["nominatedNode"] == "n1"
    assert b["status"] == "Unschedulable" and b["victims"] == [] and b["nominatedNode"] is None
    from app.simulate import format_table

    assert "preempted on n1: default/low" in format_table(result)


# preemptionPolicy Never: the run leaves the pod pending, so the eviction hint is what a user reads.
NEVER_PREEMPTING = (
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high-never}\nvalue: 1000\n"
    "preemptionPolicy: Never\n---\n" + pod_yaml("urgent", cpu="1", spec="  priorityClassName: high-never\n")
)


def preempt_hint(text: str) -> dict[str, object]:
    (record,) = run_explained(text).records
    assert record.status == "Unschedulable"
    [hint] = [h for h in record.hints if h.kind == "preempt"]
    return {"summary": hint.summary, "change": hint.change, "nodes": hint.nodes}


def test_eviction_hint_prefers_the_node_whose_victims_no_pdb_protects() -> None:
    assert preempt_hint(db_and_web_on_two_nodes(NEVER_PREEMPTING)) == {
        "summary": "evict lower-priority pod(s) default/web-0 from n2: fits there "
        "(preemptionPolicy Never forbids the scheduler to do it)",
        "change": {"node": "n2", "evict": ["default/web-0"], "pdbViolations": []},
        "nodes": ["n2"],
    }


def test_eviction_hint_spares_pdb_pods_first_and_names_those_it_cannot() -> None:
    # n1 has room for the pod once 1 cpu is free: evicting web-0 alone does it, db-0 is spared. On
    # n2 only db-1 can make room, and the hint says it violates the budget.
    spared = (
        CLASSES
        + PDB_DB
        + node_yaml("n1", cpu="2")
        + running("db-0", "n1", "1", labels="{app: db}")
        + running("web-0", "n1", "1", labels="{app: web}")
        + NEVER_PREEMPTING
    )
    assert preempt_hint(spared)["change"] == {"node": "n1", "evict": ["default/web-0"], "pdbViolations": []}
    violated = CLASSES + PDB_DB + node_yaml("n2", cpu="1") + running("db-1", "n2", "1", labels="{app: db}")
    assert preempt_hint(violated + NEVER_PREEMPTING) == {
        "summary": "evict lower-priority pod(s) default/db-1 from n2: fits there; default/db-1 violate(s) "
        "a PodDisruptionBudget (preemptionPolicy Never forbids the scheduler to do it)",
        "change": {"node": "n2", "evict": ["default/db-1"], "pdbViolations": ["default/db-1"]},
        "nodes": ["n2"],
    }
