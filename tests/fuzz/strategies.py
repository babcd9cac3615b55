"""Hypothesis strategies for what berth reads from outside: the verbs' bodies, HTTP framing, state
files and configuration files.

Objects are built the way Kubernetes shapes them (pods with containers, affinity, tolerations,
spread constraints; nodes with labels, taints, allocatable), then *mutated*: any value at any path
may be replaced by arbitrary JSON, including values nested past the decoders' limits, integers
beyond int64 and strings with control characters. Plain generation finds the shapes; mutation finds
the edges.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import strategies as st

NODE_NAMES = ["n1", "n2", "n3"]
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Equal", "in", ""]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute", "", "Sometimes"]
QUANTITIES = ["1", "100m", "0.5", "1Gi", "1e3", "-1", "1Ki", "", "abc", "9" * 30, "1.5.5", "0x10"]

label_keys = st.sampled_from(["app", "zone", "kubernetes.io/hostname", "example.com/x", "", "a/b/c", "UPPER"])
label_values = st.sampled_from(["web", "a", "", "x" * 70, "n1", "-bad-", "ü"])
labels = st.dictionaries(label_keys, label_values, max_size=4)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["\x00", "\ud7ff", "\u2028", "1e309", "NaN", "9" * 400]),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def deep(depth: int, kind: str) -> Any:
    """A value nested ``depth`` levels (built iteratively: no recursion)."""
    value: Any = "x"
    for _ in range(depth):
        value = [value] if kind == "array" else {"a": value}
    return value


deep_values = st.builds(
    deep, st.sampled_from([50, 253, 254, 255, 300, 1000]), st.sampled_from(["array", "object"])
)


def selector_requirement() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"key": label_keys, "operator": st.sampled_from(OPERATORS)},
        optional={"values": st.lists(label_values, max_size=3)},
    )


node_selector_term = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.lists(selector_requirement(), max_size=2),
        "matchFields": st.lists(selector_requirement(), max_size=1),
    },
)
label_selector = st.fixed_dictionaries(
    {}, optional={"matchLabels": labels, "matchExpressions": st.lists(selector_requirement(), max_size=2)}
)
pod_affinity_term = st.fixed_dictionaries(
    {"topologyKey": label_keys},
    optional={
        "labelSelector": label_selector,
        "namespaces": st.lists(st.sampled_from(["default", "kube-system", ""]), max_size=2),
        "matchLabelKeys": st.lists(label_keys, max_size=2),
        "mismatchLabelKeys": st.lists(label_keys, max_size=2),
    },
)
affinity = st.fixed_dictionaries(
    {},
    optional={
        "nodeAffinity": st.fixed_dictionaries(
            {},
            optional={
                "requiredDuringSchedulingIgnoredDuringExecution": st.fixed_dictionaries(
                    {"nodeSelectorTerms": st.lists(node_selector_term, max_size=2)}
                ),
                "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                    st.fixed_dictionaries({"weight": st.integers(-5, 120), "preference": node_selector_term}),
                    max_size=2,
                ),
            },
        ),
        "podAffinity": st.fixed_dictionaries(
            {},
            optional={
                "requiredDuringSchedulingIgnoredDuringExecution": st.lists(pod_affinity_term, max_size=2)
            },
        ),
        "podAntiAffinity": st.fixed_dictionaries(
            {},
            optional={
                "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                    st.fixed_dictionaries(
                        {"weight": st.integers(0, 101), "podAffinityTerm": pod_affinity_term}
                    ),
                    max_size=2,
                )
            },
        ),
    },
)
resources = st.fixed_dictionaries(
    {},
    optional={
        "requests": st.dictionaries(
            st.sampled_from(["cpu", "memory", "pods", "example.com/gpu", "hugepages-2Mi"]),
            st.sampled_from(QUANTITIES),
            max_size=3,
        )
    },
)
container = st.fixed_dictionaries(
    {"name": st.sampled_from(["c", "", "side"])},
    optional={
        "resources": resources,
        "ports": st.lists(
            st.fixed_dictionaries(
                {"containerPort": st.integers(-1, 70000)},
                optional={
                    "hostPort": st.integers(-1, 70000),
                    "protocol": st.sampled_from(["TCP", "UDP", "SCTP", "x"]),
                },
            ),
            max_size=2,
        ),
    },
)
toleration = st.fixed_dictionaries(
    {},
    optional={
        "key": label_keys,
        "operator": st.sampled_from(["Exists", "Equal", "", "Gt"]),
        "value": label_values,
        "effect": st.sampled_from(EFFECTS),
        "tolerationSeconds": st.integers(-10, 2**40),
    },
)
spread = st.fixed_dictionaries(
    {
        "maxSkew": st.integers(-1, 5),
        "topologyKey": label_keys,
        "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway", "Never"]),
    },
    optional={
        "labelSelector": label_selector,
        "matchLabelKeys": st.lists(label_keys, max_size=2),
        "minDomains": st.integers(-1, 5),
    },
)
pod_spec = st.fixed_dictionaries(
    {"containers": st.lists(container, min_size=1, max_size=2)},
    optional={
        "initContainers": st.lists(container, max_size=1),
        "nodeSelector": labels,
        "affinity": affinity,
        "tolerations": st.lists(toleration, max_size=2),
        "topologySpreadConstraints": st.lists(spread, max_size=2),
        "priority": st.integers(-(2**33), 2**33),
        "schedulerName": st.sampled_from(["default-scheduler", "other", ""]),
        "nodeName": st.sampled_from(["", "n1", "nowhere"]),
        "schedulingGates": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["g", ""])}), max_size=1),
        "overhead": st.dictionaries(
            st.sampled_from(["cpu", "memory"]), st.sampled_from(QUANTITIES), max_size=1
        ),
    },
)
metadata = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["web", "db", "x" * 300, "", "ü"]),
        "namespace": st.sampled_from(["default", "prod", ""]),
    },
    optional={"uid": st.sampled_from(["uid-1", "uid-2", ""]), "labels": labels, "annotations": labels},
)
pods = st.fixed_dictionaries(
    {"metadata": metadata, "spec": pod_spec}, optional={"apiVersion": st.just("v1"), "kind": st.just("Pod")}
)
taint = st.fixed_dictionaries(
    {"key": label_keys, "effect": st.sampled_from(EFFECTS)}, optional={"value": label_values}
)
allocatable = st.dictionaries(
    st.sampled_from(["cpu", "memory", "pods", "example.com/gpu"]), st.sampled_from(QUANTITIES), max_size=4
)
nodes = st.builds(
    lambda name, node_labels, taints, alloc, unschedulable: {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "labels": node_labels},
        "spec": {"taints": taints, "unschedulable": unschedulable},
        "status": {"allocatable": alloc, "capacity": alloc},
    },
    st.sampled_from([*NODE_NAMES, "n4", ""]),
    labels,
    st.lists(taint, max_size=2),
    allocatable,
    st.booleans(),
)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    """A value of ``base`` with up to three values at random paths replaced by arbitrary JSON."""
    value = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(0, 3))):
        value = _replace_at(draw, value, draw(st.one_of(json_values, deep_values, scalars)))
    return value


def _replace_at(draw: st.DrawFn, value: Any, replacement: Any) -> Any:
    """``value`` with one node (chosen along a random walk) replaced."""
    if not isinstance(value, (dict, list)) or not value or draw(st.integers(0, 4)) == 0:
        return replacement
    if isinstance(value, dict):
        key = draw(st.sampled_from(sorted(value, key=str)))
        value[key] = _replace_at(draw, value[key], replacement)
    else:
        i = draw(st.integers(0, len(value) - 1))
        value[i] = _replace_at(draw, value[i], replacement)
    return value


extender_args = st.one_of(
    st.fixed_dictionaries(
        {"Pod": mutated(pods), "NodeNames": st.lists(st.sampled_from([*NODE_NAMES, "n4"]), max_size=4)}
    ),
    st.fixed_dictionaries(
        {
            "Pod": mutated(pods),
            "Nodes": st.fixed_dictionaries({"items": st.lists(mutated(nodes), max_size=3)}),
        }
    ),
)
preemption_args = st.one_of(
    st.fixed_dictionaries(
        {
            "Pod": mutated(pods),
            "NodeNameToMetaVictims": st.dictionaries(
                st.sampled_from(NODE_NAMES),
                st.fixed_dictionaries(
                    {
                        "Pods": st.lists(
                            st.fixed_dictionaries({"UID": st.sampled_from(["uid-1", "busy", ""])}), max_size=2
                        ),
                        "NumPDBViolations": st.integers(-1, 3),
                    }
                ),
                max_size=3,
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "Pod": mutated(pods),
            "NodeNameToVictims": st.dictionaries(
                st.sampled_from(NODE_NAMES),
                st.fixed_dictionaries(
                    {"Pods": st.lists(mutated(pods), max_size=2), "NumPDBViolations": st.integers(0, 3)}
                ),
                max_size=2,
            ),
        }
    ),
)
binding_args = st.fixed_dictionaries(
    {},
    optional={
        "PodName": st.one_of(st.text(max_size=10), scalars),
        "PodNamespace": st.one_of(st.text(max_size=10), scalars),
        "PodUID": st.one_of(st.text(max_size=10), scalars),
        "Node": st.one_of(st.sampled_from(NODE_NAMES), scalars),
    },
)


def verb_bodies() -> st.SearchStrategy[tuple[str, bytes]]:
    """``(path, body)`` for the four verbs: mutated objects, arbitrary JSON, and broken bytes."""

    def encode(value: Any) -> bytes:
        try:
            return orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            # Deeper than orjson writes, or a lone surrogate: the standard library writes both.
            import json

            return json.dumps(value).encode()

    structured = st.one_of(
        st.tuples(st.sampled_from(["/filter", "/prioritize"]), extender_args.map(encode)),
        st.tuples(st.just("/preempt"), preemption_args.map(encode)),
        st.tuples(st.just("/bind"), mutated(binding_args).map(encode)),
        st.tuples(st.sampled_from(["/filter", "/prioritize", "/preempt", "/bind"]), json_values.map(encode)),
    )
    broken = st.tuples(
        st.sampled_from(["/filter", "/prioritize", "/preempt", "/bind"]),
        st.one_of(st.binary(max_size=64), structured.map(lambda pb: pb[1][: len(pb[1]) // 2])),
    )
    return st.one_of(structured, structured, structured, broken)


# --- HTTP framing ---------------------------------------------------------------------------------

methods = st.sampled_from(
    ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "BREW", "post", "G ET"]
)
paths = st.sampled_from(
    [
        "/filter",
        "/prioritize",
        "/preempt",
        "/bind",
        "/healthz",
        "/readyz",
        "/livez",
        "/metrics",
        "/configz",
        "/version",
        "/openapi.json",
        "/docs",
        "/",
        "/nope",
        "/filter/../healthz",
        "//filter",
        "/%66ilter",
        "/filter?x=%zz",
        "*",
        "/\x00",
    ]
)
header_names = st.sampled_from(
    [
        "content-type",
        "content-length",
        "transfer-encoding",
        "expect",
        "connection",
        "x-forwarded-for",
        "host",
        "x-a",
        "Content-Length",
    ]
)
header_values = st.one_of(
    st.sampled_from(
        [
            "application/json",
            "chunked",
            "100-continue",
            "close",
            "keep-alive",
            "abc",
            "-1",
            "0",
            "99999999999999999999",
            "gzip, chunked",
            "2",
            "",
        ]
    ),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
)


@st.composite
def raw_requests(draw: st.DrawFn) -> bytes:
    """One HTTP/1.x request, well formed or not: method, target, version, headers, body framing."""
    method = draw(methods)
    path = draw(paths)
    version = draw(st.sampled_from(["HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.1x", ""]))
    headers = draw(st.lists(st.tuples(header_names, header_values), max_size=5))
    body = draw(st.one_of(st.just(b""), verb_bodies().map(lambda pb: pb[1]), st.binary(max_size=40)))
    framing = draw(st.sampled_from(["length", "length", "chunked", "none", "wrong-length", "bad-chunk"]))
    lines = [f"{method} {path} {version}".rstrip(), "host: berth"]
    lines += [f"{name}: {value}" for name, value in headers]
    if framing == "length":
        lines.append(f"content-length: {len(body)}")
    elif framing == "wrong-length":
        lines.append(f"content-length: {len(body) + draw(st.integers(-5, 5))}")
    elif framing in ("chunked", "bad-chunk"):
        lines.append("transfer-encoding: chunked")
        body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body) if framing == "chunked" else b"zz\r\n" + body
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape") + body


# --- state and configuration files ------------------------------------------------------------------


def _yaml_or_json(draw: st.DrawFn, docs: list[Any]) -> str:
    import json

    import yaml

    how = draw(st.sampled_from(["yaml", "json", "list"]))
    if how == "json":
        return json.dumps(docs)
    if how == "list":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    try:
        return yaml.safe_dump_all(docs)
    except (yaml.YAMLError, RecursionError, ValueError):
        return json.dumps(docs)


@st.composite
def state_texts(draw: st.DrawFn) -> str:
    """A state file: nodes, pods, priority classes (mutated), as YAML or JSON, then edited as text."""
    kinds = st.one_of(
        mutated(nodes).map(lambda n: {"apiVersion": "v1", "kind": "Node", **n} if isinstance(n, dict) else n),
        mutated(pods).map(lambda p: {"apiVersion": "v1", "kind": "Pod", **p} if isinstance(p, dict) else p),
        st.builds(
            lambda v: {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "high"},
                "value": v,
            },
            st.one_of(st.integers(-(2**40), 2**40), scalars),
        ),
        json_values,
    )
    text = _yaml_or_json(draw, draw(st.lists(kinds, max_size=5)))
    return _edit_text(draw, text)


@st.composite
def config_texts(draw: st.DrawFn) -> str:
    """A KubeSchedulerConfiguration (mutated), as YAML or JSON, then edited as text."""
    plugin = st.fixed_dictionaries(
        {"name": st.sampled_from(["NodeResourcesFit", "TaintToleration", "Nope", "*", ""])},
        optional={"weight": st.integers(-1, 200)},
    )
    config = st.fixed_dictionaries(
        {
            "apiVersion": st.sampled_from(["kubescheduler.config.k8s.io/v1", "v1", ""]),
            "kind": st.sampled_from(["KubeSchedulerConfiguration", "Other"]),
        },
        optional={
            "parallelism": st.integers(-1, 2**40),
            "percentageOfNodesToScore": st.integers(-1, 200),
            "podInitialBackoffSeconds": st.integers(-1, 20),
            "profiles": st.lists(
                st.fixed_dictionaries(
                    {"schedulerName": st.sampled_from(["default-scheduler", "other", ""])},
                    optional={
                        "plugins": st.fixed_dictionaries(
                            {},
                            optional={
                                "multiPoint": st.fixed_dictionaries(
                                    {},
                                    optional={
                                        "enabled": st.lists(plugin, max_size=2),
                                        "disabled": st.lists(plugin, max_size=2),
                                    },
                                )
                            },
                        ),
                        "pluginConfig": st.lists(
                            st.fixed_dictionaries(
                                {
                                    "name": st.sampled_from(
                                        ["NodeResourcesFit", "InterPodAffinity", "DefaultPreemption"]
                                    ),
                                    "args": json_values,
                                }
                            ),
                            max_size=2,
                        ),
                    },
                ),
                max_size=2,
            ),
            "extenders": st.lists(
                st.fixed_dictionaries(
                    {"urlPrefix": st.sampled_from(["http://127.0.0.1:1", "", "x"])},
                    optional={"weight": st.integers(-1, 5), "filterVerb": st.just("filter")},
                ),
                max_size=1,
            ),
        },
    )
    text = _yaml_or_json(draw, [draw(mutated(config))])
    return _edit_text(draw, text)


def _edit_text(draw: st.DrawFn, text: str) -> str:
    """The text, or a copy with a NUL, a huge integer, deep flow nesting, a lone surrogate or a cut."""
    edit = draw(st.sampled_from(["none", "none", "nul", "bigint", "deep", "surrogate", "cut", "tab"]))
    at = draw(st.integers(0, len(text)))
    if edit == "nul":
        return text[:at] + "\x00" + text[at:]
    if edit == "bigint":
        return text.replace("1", "1" * 5000, 1)
    if edit == "deep":
        depth = draw(st.sampled_from([200, 500, 1100]))
        return (
            text + ("\nx: " if not text.lstrip().startswith(("{", "[")) else "") + "[" * depth + "]" * depth
        )
    if edit == "surrogate":
        return text.replace('"', '"\\ud800', 1)
    if edit == "cut":
        return text[:at]
    if edit == "tab":
        return text[:at] + "\t" + text[at:]
    return text
