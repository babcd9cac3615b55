"""berth simulate with preemption: victims leave, the preemptor lands on its nominated node, PDBs count."""

from __future__ import annotations

from app.simulate import to_json_dict
from tests.simulate.simhelpers import node_yaml, pod_yaml, run_text

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
    pdb = (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: default}\n"
        "spec: {selector: {matchLabels: {app: db}}}\nstatus: {disruptionsAllowed: 0}\n---\n"
    )
    text = (
        CLASSES
        + pdb
        + node_yaml("n1", cpu="1")
        + node_yaml("n2", cpu="1")
        + running("db-0", "n1", "1", labels="{app: db}")
        + running("web-0", "n2", "1", labels="{app: web}")
        + pod_yaml("urgent", cpu="1", spec="  priorityClassName: high\n")
    )
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
