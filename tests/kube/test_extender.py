"""The HTTP extender client (``extender.go``): what it sends, how it reads answers, its failures'
messages, managed resources, TLS and the timeout; ported from extender_test.go where it has cases."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from extenderstub import stub_extender, unused_url
from server.pki import CA

from app.api.objects import parse_pod
from app.config.types import Extender, ExtenderManagedResource, ExtenderTLSConfig
from app.framework.interfaces import ExtenderError
from app.framework.runtime import FrameworkError
from app.framework.types import NodeInfo
from app.kube.extender import HTTPExtender, build_extenders
from builders import make_node, make_pod, node_dict


def infos(*names: str) -> list[NodeInfo]:
    return [NodeInfo(make_node(n)) for n in names]


def ext(url: str, **kw: Any) -> HTTPExtender:
    return HTTPExtender(Extender(url_prefix=url, **kw))


class _Lister:
    def __init__(self, nodes: list[NodeInfo]) -> None:
        self.nodes = {n.name: n for n in nodes}

    def list(self) -> list[NodeInfo]:
        return list(self.nodes.values())

    def get(self, name: str) -> NodeInfo | None:
        return self.nodes.get(name)


def test_filter_with_node_names_maps_the_answer_back_to_the_given_node_infos() -> None:
    nodes = infos("a", "b", "c")
    nodes[0].add_pod(make_pod("running", nodeName="a"))
    answer = {"NodeNames": ["a", "c"], "FailedNodes": {"b": "no GPU"}, "FailedAndUnresolvableNodes": None}
    with stub_extender({"filter": lambda body: (200, answer)}) as stub:
        passed, failed, unresolvable = ext(stub.url, filter_verb="filter", node_cache_capable=True).filter(
            make_pod("p"), nodes
        )
    assert [n.name for n in passed] == ["a", "c"]
    assert passed[0] is nodes[0]  # the snapshot's NodeInfo, pods included
    assert failed == {"b": "no GPU"} and unresolvable == {}
    verb, body = stub.requests[0]
    assert verb == "filter"
    assert body["NodeNames"] == ["a", "b", "c"] and body["Nodes"] is None
    assert body["Pod"]["metadata"]["name"] == "p"


def test_filter_with_full_nodes_gets_fresh_node_infos_without_pods_as_kube_scheduler() -> None:
    nodes = infos("a", "b")
    nodes[0].add_pod(make_pod("running", [{"cpu": "1"}], nodeName="a"))

    def answer(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"Nodes": {"items": [body["Nodes"]["items"][0]]}, "Error": ""}

    with stub_extender({"filter": answer}) as stub:
        passed, _, _ = ext(stub.url, filter_verb="filter").filter(make_pod("p"), nodes)
    body = stub.requests[0][1]
    assert [n["metadata"]["name"] for n in body["Nodes"]["items"]] == ["a", "b"]
    assert body["NodeNames"] is None
    assert [n.name for n in passed] == ["a"]
    assert passed[0] is not nodes[0] and passed[0].pods == []


def test_filter_answer_naming_an_unknown_node_is_an_error() -> None:
    with (
        stub_extender({"filter": lambda body: (200, {"NodeNames": ["zzz"]})}) as stub,
        pytest.raises(ExtenderError) as err,
    ):
        ext(stub.url, filter_verb="filter", node_cache_capable=True).filter(make_pod(), infos("a"))
    assert str(err.value) == (
        f'extender "{stub.url}" claims a filtered node "zzz" which is not found in the input node list'
    )


def test_filter_error_field_and_http_500_and_bad_json_are_failures() -> None:
    with stub_extender(
        {
            "f1": lambda body: (200, {"Error": "quota exhausted"}),
            "f2": lambda body: (500, {"Error": "boom"}),
            "f3": lambda body: (200, {"FailedNodes": ["a"]}),
        }
    ) as stub:
        msgs = []
        for verb in ("f1", "f2", "f3"):
            with pytest.raises(ExtenderError) as err:
                ext(stub.url + "/", filter_verb=verb).filter(make_pod(), infos("a"))
            msgs.append(str(err.value))
    assert msgs == [
        "quota exhausted",
        f"failed f2 with extender at URL {stub.url}/f2, code 500",
        "json: cannot unmarshal array into Go struct field ExtenderFilterResult.FailedNodes "
        "of type v1.FailedNodesMap",
    ]


def test_no_filter_verb_passes_every_node_without_a_call() -> None:
    nodes = infos("a")
    assert ext(unused_url()).filter(make_pod(), nodes) == (nodes, {}, {})


def test_connection_refused_reads_like_go() -> None:
    url = unused_url()
    with pytest.raises(ExtenderError) as err:
        ext(url, filter_verb="filter").filter(make_pod(), infos("a"))
    port = url.rsplit(":", 1)[1]
    assert str(err.value) == f'Post "{url}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused'


def test_http_timeout_bounds_the_call_and_reads_like_go() -> None:
    with stub_extender({"filter": lambda body: (200, {})}, delay=2.0) as stub:
        start = time.monotonic()
        with pytest.raises(ExtenderError) as err:
            ext(stub.url, filter_verb="filter", http_timeout=0.3).filter(make_pod(), infos("a"))
        elapsed = time.monotonic() - start
    assert str(err.value) == (
        f'Post "{stub.url}/filter": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    )
    assert elapsed < 1.5


def test_http_timeout_zero_means_five_seconds() -> None:
    assert ext("http://127.0.0.1:1").timeout == 5.0
    assert ext("http://127.0.0.1:1", http_timeout=2.5).timeout == 2.5


def test_empty_url_prefix_fails_every_call_as_go_does() -> None:
    with pytest.raises(ExtenderError) as err:
        ext("", filter_verb="filter").filter(make_pod(), infos("a"))
    assert str(err.value) == 'Post "/filter": unsupported protocol scheme ""'


def test_prioritize_sends_the_nodes_and_returns_the_answer() -> None:
    answer = [{"Host": "a", "Score": 3}, {"host": "b", "score": 10}]
    with stub_extender({"prio": lambda body: (200, answer)}) as stub:
        e = ext(stub.url, prioritize_verb="prio", weight=4, node_cache_capable=True)
        assert e.prioritize(make_pod(), infos("a", "b")) == [("a", 3), ("b", 10)]
    assert stub.requests[0][1]["NodeNames"] == ["a", "b"]
    # Without a prioritize verb every node scores 0 and nothing is sent.
    assert ext(unused_url()).prioritize(make_pod(), infos("a")) == [("a", 0)]


def test_managed_resources_make_the_extender_interested_only_in_pods_using_them() -> None:
    e = ext("http://x", managed_resources=[ExtenderManagedResource("example.com/gpu")])
    assert not e.is_interested(make_pod("cpu-only", [{"cpu": "1"}]))
    assert e.is_interested(make_pod("requests", [{"example.com/gpu": "1"}]))
    raw = {
        "metadata": {"name": "lim", "namespace": "default", "uid": "u"},
        "spec": {
            "containers": [{"name": "c", "resources": {"limits": {"example.com/gpu": "1"}}}],
        },
    }
    assert e.is_interested(parse_pod(raw))
    init = {
        "metadata": {"name": "init", "namespace": "default", "uid": "u2"},
        "spec": {
            "containers": [{"name": "c"}],
            "initContainers": [{"name": "i", "resources": {"requests": {"example.com/gpu": "1"}}}],
        },
    }
    assert e.is_interested(parse_pod(init))
    assert ext("http://x").is_interested(make_pod("anything"))


def test_preemption_sends_meta_victims_to_a_node_cache_capable_extender_and_resolves_uids() -> None:
    node = NodeInfo(make_node("a"))
    v1, v2 = make_pod("v1", nodeName="a"), make_pod("v2", nodeName="a")
    node.add_pod(v1)
    node.add_pod(v2)
    answer = {"NodeNameToMetaVictims": {"a": {"Pods": [{"UID": v2.uid}], "NumPDBViolations": 1}}}
    with stub_extender({"preempt": lambda body: (200, answer)}) as stub:
        e = ext(stub.url, preempt_verb="preempt", node_cache_capable=True)
        kept = e.process_preemption(make_pod("p"), {"a": ([v1, v2], 0)}, _Lister([node]))
    assert kept == {"a": ([v2], 1)}
    body = stub.requests[0][1]
    assert body["NodeNameToVictims"] is None
    assert body["NodeNameToMetaVictims"] == {
        "a": {"Pods": [{"UID": v1.uid}, {"UID": v2.uid}], "NumPDBViolations": 0}
    }


def test_preemption_sends_full_victims_otherwise_and_rejects_unknown_pods() -> None:
    node = NodeInfo(make_node("a"))
    v1 = make_pod("v1", nodeName="a")
    node.add_pod(v1)
    answer = {"NodeNameToMetaVictims": {"a": {"Pods": [{"UID": "nope"}]}}}
    with (
        stub_extender({"preempt": lambda body: (200, answer)}) as stub,
        pytest.raises(ExtenderError) as err,
    ):
        ext(stub.url, preempt_verb="preempt").process_preemption(
            make_pod("p"), {"a": ([v1], 0)}, _Lister([node])
        )
    assert str(err.value) == (
        f"extender: {stub.url} claims to preempt pod (UID: &{{nope}}) on node: a, but the pod is not found on that node"
    )
    assert stub.requests[0][1]["NodeNameToVictims"]["a"]["Pods"][0]["metadata"]["name"] == "v1"


def test_bind_sends_the_binding_args_and_reads_the_error() -> None:
    with stub_extender(
        {"bind": lambda body: (200, {"Error": ""}), "nobind": lambda body: (200, {"Error": "node full"})}
    ) as stub:
        pod = make_pod("p")
        ext(stub.url, bind_verb="bind").bind(pod, "a")
        with pytest.raises(ExtenderError, match=r"^node full$"):
            ext(stub.url, bind_verb="nobind").bind(pod, "a")
    assert stub.requests[0][1] == {"PodName": "p", "PodNamespace": "default", "PodUID": pod.uid, "Node": "a"}


def test_build_extenders_puts_ignorable_ones_last() -> None:
    built = build_extenders(
        [
            Extender(url_prefix="http://a", ignorable=True),
            Extender(url_prefix="http://b"),
            Extender(url_prefix="http://c"),
        ]
    )
    assert [e.name for e in built] == ["http://b", "http://c", "http://a"]


def test_unreadable_tls_files_name_the_extender_entry(tmp_path: Path) -> None:
    with pytest.raises(FrameworkError, match=r"^extenders\[1\]\.tlsConfig: "):
        build_extenders(
            [
                Extender(url_prefix="http://a"),
                Extender(
                    url_prefix="https://b", tls_config=ExtenderTLSConfig(ca_file=str(tmp_path / "missing"))
                ),
            ]
        )


@pytest.fixture(scope="module")
def server_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[CA, tuple[Path, Path]]:
    d = tmp_path_factory.mktemp("extender-tls")
    ca = CA.create(d, "extender-ca")
    return ca, ca.issue(d, "127.0.0.1", server=True)


def test_https_with_the_servers_ca_verifies_and_without_a_ca_is_insecure(
    server_cert: tuple[CA, tuple[Path, Path]],
) -> None:
    ca, (cert, key) = server_cert
    answer = {"NodeNames": ["a"]}
    with stub_extender({"filter": lambda body: (200, answer)}, tls=(str(cert), str(key))) as stub:
        verified = ext(
            stub.url,
            filter_verb="filter",
            node_cache_capable=True,
            enable_https=True,
            tls_config=ExtenderTLSConfig(ca_data=ca.cert_file.read_bytes()),
        )
        assert [n.name for n in verified.filter(make_pod(), infos("a"))[0]] == ["a"]
        # enableHTTPS without a CA: kube-scheduler sets Insecure and skips verification.
        insecure = ext(stub.url, filter_verb="filter", node_cache_capable=True, enable_https=True)
        assert [n.name for n in insecure.filter(make_pod(), infos("a"))[0]] == ["a"]
        # https:// without enableHTTPS and without a CA verifies against the system roots: refused.
        strict = ext(stub.url, filter_verb="filter", node_cache_capable=True)
        with pytest.raises(ExtenderError, match=r'^Post "https://127\.0\.0\.1:\d+/filter": tls: '):
            strict.filter(make_pod(), infos("a"))


def test_node_list_in_the_request_is_a_go_node_list() -> None:
    with stub_extender({"filter": lambda body: (200, {"Nodes": body["Nodes"]})}) as stub:
        ext(stub.url, filter_verb="filter").filter(make_pod(), infos("a"))
    assert stub.requests[0][1]["Nodes"] == {"metadata": {}, "items": [node_dict("a")]}


def test_client_certificate_from_files_or_data(
    server_cert: tuple[CA, tuple[Path, Path]], tmp_path: Path
) -> None:
    """An extender requiring client certificates: ``certFile``/``keyFile`` and ``certData``/``keyData``
    both present one; without it the TLS handshake fails."""
    ca, (cert, key) = server_cert
    client_ca = CA.create(tmp_path, "clients")
    client_cert, client_key = client_ca.issue(tmp_path, "kube-scheduler")
    answer = {"NodeNames": ["a"]}
    with stub_extender(
        {"filter": lambda body: (200, answer)}, tls=(str(cert), str(key)), client_ca=str(client_ca.cert_file)
    ) as stub:
        common = {"filter_verb": "filter", "node_cache_capable": True}
        from_files = ExtenderTLSConfig(
            ca_file=str(ca.cert_file), cert_file=str(client_cert), key_file=str(client_key)
        )
        from_data = ExtenderTLSConfig(
            ca_data=ca.cert_file.read_bytes(),
            cert_data=client_cert.read_bytes(),
            key_data=client_key.read_bytes(),
        )
        for tls in (from_files, from_data):
            passed, _, _ = ext(stub.url, tls_config=tls, **common).filter(make_pod(), infos("a"))
            assert [n.name for n in passed] == ["a"]
        anonymous = ext(stub.url, tls_config=ExtenderTLSConfig(ca_file=str(ca.cert_file)), **common)
        with pytest.raises(ExtenderError, match=r'^Post "https://127\.0\.0\.1:\d+/filter": '):
            anonymous.filter(make_pod(), infos("a"))
