"""The framework runtime, ported from kube-scheduler v1.36.3 framework/runtime/framework_test.go:
plugin expansion (TestNewFrameworkMultiPointExpansion), NewFramework errors, score weights, and the
Run* semantics of every extension point."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import pytest

from app import metrics
from app.api.objects import Pod
from app.framework.cycle_state import CycleState
from app.framework.interfaces import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PluginError,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from app.framework.registry import Registry
from app.framework.runtime import (
    MAX_PERMIT_TIMEOUT,
    Framework,
    FrameworkError,
    NodeScores,
    PluginRef,
    ProfileSpec,
    TimedFilters,
)
from app.framework.status import Code, Status
from app.framework.types import NodeInfo, PodInfo
from builders import make_node, make_pod
from fakes import FakeHandle, node_info

CALLS: list[str] = []
INJECTED_REASON = "injected filter status"


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


class _Behaviour:
    """Every extension point, answering with the class's ``inj`` values and logging each call."""

    name: ClassVar[str]
    inj: ClassVar[dict[str, Any]]

    def _answer(self, key: str, default: Any, *args: Any) -> Any:
        CALLS.append(f"{self.name}.{key}")
        value = self.inj.get(key, default)
        if callable(value):
            return value(*args)
        if isinstance(value, Status):  # the framework may set the plugin: hand out a copy
            return Status(value.code, *value.reasons)
        if isinstance(value, tuple) and value and isinstance(value[-1], Status):
            s = value[-1]
            return (*value[:-1], Status(s.code, *s.reasons))
        return value

    def less(self, a: Any, b: Any) -> bool:
        return False

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        out: tuple[PreFilterResult | None, Status | None] = self._answer("pre_filter", (None, None))
        return out

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        ext: PreFilterExtensions | None = self.inj.get("extensions")
        return ext

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return self._answer("filter", None, state, pod, node_info)

    def post_filter(
        self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        return self._answer("post_filter", (None, Status(Code.UNSCHEDULABLE)))

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        return self._answer("pre_score", None)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return self._answer("score", 0, node_info)

    def normalize_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> Status | None:
        return self._answer("normalize", None, scores)

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self._answer("reserve", None)

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._answer("unreserve", None)

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        return self._answer("permit", (None, 0.0))

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self._answer("pre_bind", None)

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self._answer("pre_bind_pre_flight", None)

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self._answer("bind", None)

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._answer("post_bind", None)


def make(name: str, *ifaces: type[Plugin], **inj: Any) -> type[Plugin]:
    """A plugin class named ``name`` implementing ``ifaces`` with injected results."""
    attrs = {"name": name, "inj": inj, "normalizes": "normalize" in inj}
    return type(name, (_Behaviour, *ifaces), attrs)


ALL_POINTS = (
    QueueSortPlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    PermitPlugin,
    PreBindPlugin,
    BindPlugin,
    PostBindPlugin,
)
QUEUE_SORT = make("queueSortPlugin", QueueSortPlugin)
BINDER = make("bindPlugin", BindPlugin)

Points = Mapping[str, Sequence[str | PluginRef]]


def framework(
    plugins: Sequence[type[Plugin]],
    enabled: Points,
    disabled: Mapping[str, Sequence[str]] | None = None,
    defaults: bool = True,
    handle: FakeHandle | None = None,
) -> Framework:
    """Framework(ProfileSpec, Registry, FakeHandle) with a queue sort and binder added unless given."""
    disabled = disabled or {}
    spec: dict[str, tuple[list[PluginRef], list[str]]] = {}
    for point in {*enabled, *disabled}:
        refs = [p if isinstance(p, PluginRef) else PluginRef(p) for p in enabled.get(point, ())]
        spec[point] = (refs, list(disabled.get(point, ())))
    registry = list(plugins)
    if defaults:
        registry += [QUEUE_SORT, BINDER]
        spec.setdefault("queueSort", ([PluginRef(QUEUE_SORT.name)], []))
        spec.setdefault("bind", ([PluginRef(BINDER.name)], []))
    return Framework(ProfileSpec("default-scheduler", spec, {}), Registry(registry), handle or FakeHandle())


def names(plugins: Sequence[Plugin]) -> list[str]:
    return [p.name for p in plugins]


POD = make_pod("p")
NODE = node_info(make_node("node"))

# --- expandMultiPointPlugins (TestNewFrameworkMultiPointExpansion) -----------------------------

TEST_PLUGIN = make("testPlugin", *ALL_POINTS)
SCORE_1 = make("scorePlugin1", PreScorePlugin, ScorePlugin)
SCORE_2 = make("scorePlugin2", PreScorePlugin, ScorePlugin)
SCORE_NORM_1 = make("scoreWithNormalizePlugin1", ScorePlugin, normalize=lambda scores: None)
EXPANSION_REGISTRY = [TEST_PLUGIN, SCORE_1, SCORE_2, SCORE_NORM_1, QUEUE_SORT, BINDER]
T = "testPlugin"
S1, S2, SN1 = "scorePlugin1", "scorePlugin2", "scoreWithNormalizePlugin1"


def _all_points_with(plugin: str) -> dict[str, list[str]]:
    points = ["queueSort", "preFilter", "filter", "postFilter", "preScore", "score"]
    points += ["reserve", "permit", "preBind", "bind", "postBind"]
    return {p: [plugin] for p in points}


def _expanded(fw: Framework) -> dict[str, list[str]]:
    lists: dict[str, Sequence[Plugin]] = {
        "queueSort": fw.queue_sort,
        "preFilter": fw.pre_filter,
        "filter": fw.filter,
        "postFilter": fw.post_filter,
        "preScore": fw.pre_score,
        "score": fw.score,
        "reserve": fw.reserve,
        "permit": fw.permit,
        "preBind": fw.pre_bind,
        "bind": fw.bind,
        "postBind": fw.post_bind,
        "preEnqueue": fw.pre_enqueue,
    }
    return {k: names(v) for k, v in lists.items() if v}


EXPANSION_CASES: list[tuple[str, Points, dict[str, list[str]], dict[str, list[str]], dict[str, int]]] = [
    ("plugin expansion", {"multiPoint": [PluginRef(T, 5)]}, {}, _all_points_with(T), {T: 5}),
    (
        "disable MultiPoint plugin at some extension points",
        {"multiPoint": [T]},
        {"preScore": [T], "score": [T]},
        {k: v for k, v in _all_points_with(T).items() if k not in ("preScore", "score")},
        {T: 1},
    ),
    (
        "Multiple MultiPoint plugins",
        {"multiPoint": [T, S1]},
        {},
        {**_all_points_with(T), "preScore": [T, S1], "score": [T, S1]},
        {T: 1, S1: 1},
    ),
    (
        "disable MultiPoint extension",
        {"multiPoint": [T, S1]},
        {"preScore": ["*"]},
        {**{k: v for k, v in _all_points_with(T).items() if k != "preScore"}, "score": [T, S1]},
        {T: 1, S1: 1},
    ),
    (
        "Reorder MultiPoint plugins (specified extension takes precedence)",
        {"multiPoint": [SN1, T, S1], "score": [S1, T]},
        {},
        {**_all_points_with(T), "preScore": [T, S1], "score": [S1, T, SN1]},
        {S1: 1, T: 1, SN1: 1},
    ),
    (
        "Reorder MultiPoint plugins (specified extension only takes precedence when it exists in MultiPoint)",
        {"multiPoint": [T, S1], "score": [SN1, S1, T]},
        {},
        {**_all_points_with(T), "preScore": [T, S1], "score": [S1, T, SN1]},
        {S1: 1, T: 1, SN1: 1},
    ),
    (
        "Override MultiPoint plugins weights",
        {"multiPoint": [T, S1], "score": [PluginRef(S1, 5), PluginRef(T, 3)]},
        {},
        {**_all_points_with(T), "preScore": [T, S1], "score": [S1, T]},
        {S1: 5, T: 3},
    ),
    (
        "disable and enable MultiPoint plugins with '*'",
        {"multiPoint": ["queueSortPlugin", "bindPlugin", S1]},
        {"multiPoint": ["*"]},
        {"queueSort": ["queueSortPlugin"], "preScore": [S1], "score": [S1], "bind": ["bindPlugin"]},
        {S1: 1},
    ),
    (
        "disable and enable MultiPoint plugin by name",
        {"multiPoint": ["bindPlugin", "queueSortPlugin", S1]},
        {"multiPoint": [S1]},
        {"queueSort": ["queueSortPlugin"], "preScore": [S1], "score": [S1], "bind": ["bindPlugin"]},
        {S1: 1},
    ),
    (
        "Override MultiPoint plugins weights and avoid a plugin being loaded multiple times",
        {"multiPoint": [T, S1], "score": [PluginRef(S1, 5), PluginRef(S2, 5), PluginRef(T, 3)]},
        {},
        {**_all_points_with(T), "preScore": [T, S1], "score": [S1, T, S2]},
        {S1: 5, T: 3, S2: 5},
    ),
]


@pytest.mark.parametrize(
    ("enabled", "disabled", "want", "weights"),
    [c[1:] for c in EXPANSION_CASES],
    ids=[c[0] for c in EXPANSION_CASES],
)
def test_multi_point_expansion(
    enabled: Points, disabled: dict[str, list[str]], want: dict[str, list[str]], weights: dict[str, int]
) -> None:
    fw = framework(EXPANSION_REGISTRY, enabled, disabled, defaults=False)
    assert _expanded(fw) == want
    assert fw.score_weights == weights


def test_multi_point_double_registration() -> None:
    with pytest.raises(FrameworkError, match="already registered"):
        framework(EXPANSION_REGISTRY, {"multiPoint": [T, T]}, defaults=False)


# --- NewFramework errors (TestNewFrameworkErrors, TestInitFrameworkWithScorePlugins) --------------

DUP = make("duplicatePlugin", PreFilterPlugin)
FILTER_ONLY = make("filterOnly", FilterPlugin)


@pytest.mark.parametrize(
    ("plugins", "enabled", "message"),
    [
        ([DUP], {"preFilter": ["duplicatePlugin", "duplicatePlugin"]}, "already registered"),
        ([FILTER_ONLY], {"score": ["filterOnly"]}, 'plugin "filterOnly" does not extend ScorePlugin plugin'),
        ([], {"score": ["notExist"]}, 'plugin "notExist" does not exist'),
        (
            [],
            {"queueSort": []},
            'only one queue sort plugin required for profile with scheduler name "default-scheduler", but got 0',
        ),
        (
            [],
            {"bind": []},
            'at least one bind plugin is needed for profile with scheduler name "default-scheduler"',
        ),
        ([SCORE_1], {"score": [PluginRef(S1, 2**62)]}, "total score of Score plugins could overflow"),
    ],
)
def test_new_framework_errors(plugins: list[type[Plugin]], enabled: Points, message: str) -> None:
    with pytest.raises(FrameworkError, match=message):
        framework(plugins, enabled)


@pytest.mark.parametrize("enabled", [{}, {"score": []}, {"score": [S1]}, {"score": [SN1]}])
def test_init_framework_with_score_plugins(enabled: Points) -> None:
    fw = framework([SCORE_1, SCORE_NORM_1], enabled)
    assert names(fw.score) == list(enabled.get("score", []))


def test_plugin_init_failure_is_a_framework_error() -> None:
    class Broken(FilterPlugin):
        name: ClassVar[str] = "Broken"

        def __init__(self, args: Any, handle: Any) -> None:
            raise ValueError("bad args")

    with pytest.raises(FrameworkError, match='initializing plugin "Broken": bad args'):
        framework([Broken], {"filter": ["Broken"]})


# --- PreFilter (TestRunPreFilterPlugins) ---------------------------------------------------------


def _pre_filter(name: str, status: Code | None = None, nodes: set[str] | None = None) -> type[Plugin]:
    result = PreFilterResult(nodes) if nodes is not None else None
    return make(
        name,
        PreFilterPlugin,
        FilterPlugin,
        pre_filter=(result, Status(status, f"injected {name}") if status else None),
    )


PRE_FILTER_CASES = [
    ("all PreFilter returned success", [("success1", None), ("success2", None)], set(), None),
    (
        "one PreFilter plugin returned success, but another PreFilter plugin returned non-success",
        [("success", None), ("error", Code.ERROR)],
        set(),
        Code.ERROR,
    ),
    (
        "one PreFilter plugin returned skip, but another PreFilter plugin returned non-success",
        [("skip", Code.SKIP), ("error", Code.ERROR)],
        {"skip"},
        Code.ERROR,
    ),
    (
        "all PreFilter plugins returned skip",
        [("skip1", Code.SKIP), ("skip2", Code.SKIP), ("skip3", Code.SKIP)],
        {"skip1", "skip2", "skip3"},
        None,
    ),
    (
        "some PreFilter plugins returned skip",
        [("skip1", Code.SKIP), ("success1", None), ("skip2", Code.SKIP), ("success2", None)],
        {"skip1", "skip2"},
        None,
    ),
    (
        "one PreFilter plugin returned Unschedulable, but another PreFilter plugin should be executed",
        [("unschedulable", Code.UNSCHEDULABLE), ("skip", Code.SKIP)],
        {"skip"},
        Code.UNSCHEDULABLE,
    ),
    (
        "one PreFilter plugin returned UnschedulableAndUnresolvable, and all other plugins aren't executed",
        [("unresolvable", Code.UNSCHEDULABLE_AND_UNRESOLVABLE), ("skip", Code.SKIP)],
        set(),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
]


@pytest.mark.parametrize(
    ("plugins", "skipped", "code"), [c[1:] for c in PRE_FILTER_CASES], ids=[c[0] for c in PRE_FILTER_CASES]
)
def test_run_pre_filter_plugins(
    plugins: list[tuple[str, Code | None]], skipped: set[str], code: Code | None
) -> None:
    classes = [_pre_filter(n, c) for n, c in plugins]
    fw = framework(classes, {"preFilter": [n for n, _ in plugins]})
    state = CycleState()
    result, status, _ = fw.run_pre_filter_plugins(state, POD, [NODE])
    assert result is None
    assert (status.code if status is not None else None) == code
    assert state.skip_filter_plugins == skipped


def test_pre_filter_statuses_carry_the_plugin_and_error_message() -> None:
    fw = framework([_pre_filter("error", Code.ERROR)], {"preFilter": ["error"]})
    _, status, _ = fw.run_pre_filter_plugins(CycleState(), POD, [NODE])
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'running PreFilter plugin "error": injected error'
    assert status.plugin == "error"

    fw = framework(
        [_pre_filter("u", Code.UNSCHEDULABLE), _pre_filter("v", Code.UNSCHEDULABLE)],
        {"preFilter": ["u", "v"]},
    )
    _, status, _ = fw.run_pre_filter_plugins(CycleState(), POD, [NODE])
    assert status is not None and (status.plugin, status.message()) == ("v", "injected v")  # the last one


def test_pre_filter_result_reject_all_nodes_stops() -> None:
    # "all nodes are filtered out by prefilter result, but other plugins aren't executed"
    fw = framework(
        [_pre_filter("reject-all-nodes", nodes=set()), _pre_filter("skip", Code.SKIP)],
        {"preFilter": ["reject-all-nodes", "skip"]},
    )
    state = CycleState()
    result, status, with_nodes = fw.run_pre_filter_plugins(state, POD, [NODE])
    assert result == PreFilterResult(set())
    assert status is not None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "node(s) didn't satisfy plugin reject-all-nodes"
    assert state.skip_filter_plugins == set()
    assert with_nodes == {"reject-all-nodes"}
    assert CALLS == ["reject-all-nodes.pre_filter"]


def test_pre_filter_results_intersect() -> None:
    plugins = [_pre_filter("B", nodes={"n1", "n2"}), _pre_filter("A", nodes={"n2", "n3"}), _pre_filter("C")]
    fw = framework(plugins, {"preFilter": ["B", "A", "C"]})
    result, status, with_nodes = fw.run_pre_filter_plugins(CycleState(), POD, [NODE])
    assert status is None
    assert result == PreFilterResult({"n2"})
    assert with_nodes == {"A", "B"}


def test_pre_filter_results_disjoint_message_lists_plugins_sorted() -> None:
    plugins = [_pre_filter("B", nodes={"n1"}), _pre_filter("A", nodes={"n2"})]
    fw = framework(plugins, {"preFilter": ["B", "A"]})
    _, status, with_nodes = fw.run_pre_filter_plugins(CycleState(), POD, [NODE])
    assert status is not None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "node(s) didn't satisfy plugin(s) [A B] simultaneously"
    assert status.plugin == ""
    assert with_nodes == {"A", "B"}


def test_pre_filter_plugin_error_exception_becomes_error() -> None:
    def boom(*_: Any) -> Any:
        raise PluginError("kaput")

    fw = framework([make("boom", PreFilterPlugin, pre_filter=boom)], {"preFilter": ["boom"]})
    _, status, _ = fw.run_pre_filter_plugins(CycleState(), POD, [NODE])
    assert status is not None and status.code is Code.ERROR and "kaput" in status.message()


class _Extensions(PreFilterExtensions):
    def __init__(self, name: str, status: Status | None = None) -> None:
        self.name, self.status = name, status

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: PodInfo, node_info: NodeInfo) -> Status | None:
        CALLS.append(f"{self.name}.add_pod({pod_to_add.pod.name})")
        return self.status

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        CALLS.append(f"{self.name}.remove_pod({pod_to_remove.pod.name})")
        return self.status


def test_pre_filter_extensions_add_remove_pod() -> None:
    # TestRunPreFilterExtensionAddPod / RemovePod: skipped plugins are not called; errors wrap.
    plugins = [
        make("ok", PreFilterPlugin, extensions=_Extensions("ok")),
        make(
            "skipped",
            PreFilterPlugin,
            extensions=_Extensions("skipped"),
            pre_filter=(None, Status(Code.SKIP)),
        ),
        make("bad", PreFilterPlugin, extensions=_Extensions("bad", Status(Code.ERROR, "no"))),
    ]
    fw = framework(plugins, {"preFilter": ["ok", "skipped", "bad"]})
    state = CycleState()
    fw.run_pre_filter_plugins(state, POD, [NODE])
    CALLS.clear()
    other = PodInfo(make_pod("other"))
    s = fw.run_pre_filter_extension_add_pod(state, POD, other, NODE)
    assert s is not None and s.message() == 'running AddPod on PreFilter plugin "bad": no'
    s = fw.run_pre_filter_extension_remove_pod(state, POD, other, NODE)
    assert s is not None and s.message() == 'running RemovePod on PreFilter plugin "bad": no'
    assert CALLS == [
        "ok.add_pod(other)",
        "bad.add_pod(other)",
        "ok.remove_pod(other)",
        "bad.remove_pod(other)",
    ]


# --- Filter (TestFilterPlugins) --------------------------------------------------------------------


def _filter(name: str, code: Code) -> type[Plugin]:
    status = None if code is Code.SUCCESS else Status(code, INJECTED_REASON)
    return make(name, FilterPlugin, filter=status)


FILTER_CASES = [
    ("SuccessFilter", [("TestPlugin", Code.SUCCESS)], None),
    (
        "ErrorFilter",
        [("TestPlugin", Code.ERROR)],
        (Code.ERROR, f'running "TestPlugin" filter plugin: {INJECTED_REASON}', "TestPlugin"),
    ),
    (
        "UnschedulableFilter",
        [("TestPlugin", Code.UNSCHEDULABLE)],
        (Code.UNSCHEDULABLE, INJECTED_REASON, "TestPlugin"),
    ),
    (
        "UnschedulableAndUnresolvableFilter",
        [("TestPlugin", Code.UNSCHEDULABLE_AND_UNRESOLVABLE)],
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, INJECTED_REASON, "TestPlugin"),
    ),
    (
        "ErrorAndErrorFilters",
        [("TestPlugin1", Code.ERROR), ("TestPlugin2", Code.ERROR)],
        (Code.ERROR, f'running "TestPlugin1" filter plugin: {INJECTED_REASON}', "TestPlugin1"),
    ),
    (
        "UnschedulableAndUnschedulableFilters",
        [("TestPlugin1", Code.UNSCHEDULABLE), ("TestPlugin2", Code.UNSCHEDULABLE)],
        (Code.UNSCHEDULABLE, INJECTED_REASON, "TestPlugin1"),
    ),
    (
        "UnschedulableAndUnschedulableAndUnresolvableFilters",
        [("TestPlugin1", Code.UNSCHEDULABLE_AND_UNRESOLVABLE), ("TestPlugin2", Code.UNSCHEDULABLE)],
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, INJECTED_REASON, "TestPlugin1"),
    ),
    ("SuccessAndSuccessFilters", [("TestPlugin1", Code.SUCCESS), ("TestPlugin2", Code.SUCCESS)], None),
    (
        "ErrorAndSuccessFilters",
        [("TestPlugin1", Code.ERROR), ("TestPlugin2", Code.SUCCESS)],
        (Code.ERROR, f'running "TestPlugin1" filter plugin: {INJECTED_REASON}', "TestPlugin1"),
    ),
    (
        "SuccessAndErrorFilters",
        [("TestPlugin1", Code.SUCCESS), ("TestPlugin2", Code.ERROR)],
        (Code.ERROR, f'running "TestPlugin2" filter plugin: {INJECTED_REASON}', "TestPlugin2"),
    ),
    (
        "SuccessAndUnschedulableFilters",
        [("TestPlugin1", Code.SUCCESS), ("TestPlugin2", Code.UNSCHEDULABLE)],
        (Code.UNSCHEDULABLE, INJECTED_REASON, "TestPlugin2"),
    ),
    (
        "SkipFilterIsAnError",
        [("TestPlugin", Code.SKIP)],
        (Code.ERROR, f'running "TestPlugin" filter plugin: {INJECTED_REASON}', "TestPlugin"),
    ),
    ("PendingFilter", [("TestPlugin", Code.PENDING)], (Code.PENDING, INJECTED_REASON, "TestPlugin")),
]


@pytest.mark.parametrize(("plugins", "want"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_filter_plugins(plugins: list[tuple[str, Code]], want: tuple[Code, str, str] | None) -> None:
    fw = framework([_filter(n, c) for n, c in plugins], {"filter": [n for n, _ in plugins]})
    status = fw.run_filter_plugins(CycleState(), POD, NODE)
    got = None if status is None else (status.code, status.message(), status.plugin)
    assert got == want


def sampled() -> CycleState:
    state = CycleState()
    state.record_plugin_metrics = True
    return state


def plugin_samples(plugin: str, point: str, code: str) -> int:
    return metrics.PLUGIN_EXECUTION_DURATION.sample_count((plugin, point, code))


@pytest.mark.parametrize(("plugins", "want"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_filter_plugins_in_a_sampled_cycle(
    plugins: list[tuple[str, Code]], want: tuple[Code, str, str] | None
) -> None:
    # The same verdicts, and one duration per plugin call under the status code it returned.
    fw = framework([_filter(n, c) for n, c in plugins], {"filter": [n for n, _ in plugins]})
    before = {(n, c): plugin_samples(n, "Filter", c.label) for n, c in plugins}
    status = fw.run_filter_plugins(sampled(), POD, NODE)
    got = None if status is None else (status.code, status.message(), status.plugin)
    assert got == want
    called = {c.split(".")[0] for c in CALLS if c.endswith(".filter")}
    for n, c in plugins:
        assert plugin_samples(n, "Filter", c.label) - before[(n, c)] == (1 if n in called else 0)


FOUR_NODES = [node_info(make_node(f"node-{i}")) for i in range(4)]


def _statuses(fw: Framework, nodes: Sequence[NodeInfo]) -> dict[str, tuple[Code, str, str]]:
    """Each node's run_filter_plugins verdict, node by node (the reference)."""
    out = {}
    for info in nodes:
        s = fw.run_filter_plugins(CycleState(), POD, info)
        if s is not None:
            out[info.name] = (s.code, s.message(), s.plugin)
    return out


def _all(fw: Framework, nodes: Sequence[NodeInfo]) -> tuple[list[str], dict[str, tuple[Code, str, str]]]:
    state = CycleState()
    feasible, failed = fw.run_filter_plugins_all(state, POD, nodes, fw.active_filters(state))
    return [n.name for n in feasible], {k: (s.code, s.message(), s.plugin) for k, s in failed.items()}


@pytest.mark.parametrize(("plugins", "want"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_filter_plugins_on_all_nodes_give_each_node_its_verdict(
    plugins: list[tuple[str, Code]], want: tuple[Code, str, str] | None
) -> None:
    fw = framework([_filter(n, c) for n, c in plugins], {"filter": [n for n, _ in plugins]})
    feasible, failed = _all(fw, FOUR_NODES)
    assert failed == ({} if want is None else {n.name: want for n in FOUR_NODES})
    assert feasible == ([n.name for n in FOUR_NODES] if want is None else [])


def _rejecting(name: str, verdicts: Mapping[str, Status]) -> type[Plugin]:
    def verdict(state: CycleState, pod: Pod, info: NodeInfo) -> Status | None:
        s = verdicts.get(info.name)
        return None if s is None else Status(s.code, *s.reasons)

    return make(name, FilterPlugin, filter=verdict)


def test_filter_plugins_on_all_nodes_stop_at_each_nodes_first_failure() -> None:
    # node-1 fails the second plugin only, node-2 both (the first wins), node-3 the first; the
    # failures come back in node order, and a node that failed is not asked by later plugins.
    first = _rejecting(
        "First", {"node-2": Status(Code.UNSCHEDULABLE, "a"), "node-3": Status(Code.UNSCHEDULABLE, "b")}
    )
    second = _rejecting(
        "Second",
        {
            "node-1": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "c"),
            "node-2": Status(Code.UNSCHEDULABLE, "d"),
        },
    )
    fw = framework([first, second], {"filter": ["First", "Second"]})
    reference = _statuses(fw, FOUR_NODES)
    CALLS.clear()
    feasible, failed = _all(fw, FOUR_NODES)
    assert feasible == ["node-0"]
    assert failed == reference
    assert list(failed) == ["node-1", "node-2", "node-3"]
    assert failed["node-2"][2] == "First"
    assert CALLS.count("First.filter") == 4 and CALLS.count("Second.filter") == 2


def test_filter_plugins_on_all_nodes_skip_a_plugin_that_passes_them_all() -> None:
    class PassesAll(_filter("PassesAll", Code.UNSCHEDULABLE)):  # type: ignore[misc]
        def filter_all(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> None:
            return None

    fw = framework([PassesAll], {"filter": ["PassesAll"]})
    assert _all(fw, FOUR_NODES) == ([n.name for n in FOUR_NODES], {})


def test_filter_plugins_on_all_nodes_turn_a_raised_plugin_error_into_that_nodes_error() -> None:
    def raising(state: CycleState, pod: Pod, info: NodeInfo) -> Status | None:
        if info.name == "node-2":
            raise PluginError("disk on fire")
        return Status(Code.UNSCHEDULABLE, "full") if info.name == "node-0" else None

    fw = framework([make("Raising", FilterPlugin, filter=raising)], {"filter": ["Raising"]})
    feasible, failed = _all(fw, FOUR_NODES)
    assert feasible == ["node-1", "node-3"]
    assert failed == _statuses(fw, FOUR_NODES)
    assert failed["node-2"] == (Code.ERROR, 'running "Raising" filter plugin: disk on fire', "Raising")


def test_timed_filters_record_every_call_once_flushed() -> None:
    ok = make("timedOk", FilterPlugin)
    no = make("timedNo", FilterPlugin, filter=Status(Code.UNSCHEDULABLE, "no"))
    fw = framework([ok, no], {"filter": ["timedOk", "timedNo"]})
    timed = TimedFilters(fw.active_filters(CycleState()))
    assert names(timed.plugins) == ["timedOk", "timedNo"]
    before = (
        plugin_samples("timedOk", "Filter", "Success"),
        plugin_samples("timedNo", "Filter", "Unschedulable"),
    )
    for _ in range(3):
        status = fw.run_filter_plugins(CycleState(), POD, NODE, timed.plugins)
        assert status is not None and status.plugin == "timedNo"
    assert plugin_samples("timedOk", "Filter", "Success") == before[0]  # nothing until flushed
    timed.flush()
    timed.flush()  # flushing twice records nothing twice
    after = (
        plugin_samples("timedOk", "Filter", "Success"),
        plugin_samples("timedNo", "Filter", "Unschedulable"),
    )
    assert (after[0] - before[0], after[1] - before[1]) == (3, 3)


def test_a_sampled_score_records_one_duration_per_node() -> None:
    fw = framework(
        [make("timedScore", ScorePlugin, score=_by_node(node1=10, node2=40))], {"score": ["timedScore"]}
    )
    before = plugin_samples("timedScore", "Score", "Success")
    scores, status = fw.run_score_plugins(sampled(), POD, NODES)
    assert status is None and [s.total for s in scores] == [10, 40]
    assert plugin_samples("timedScore", "Score", "Success") - before == len(NODES)


def test_a_sampled_score_error_records_the_error() -> None:
    def fail(_: NodeInfo) -> int:
        raise PluginError("boom")

    fw = framework([make("timedFail", ScorePlugin, score=fail)], {"score": ["timedFail"]})
    scores, status = fw.run_score_plugins(sampled(), POD, NODES)
    assert scores == [] and status is not None and status.code is Code.ERROR
    assert plugin_samples("timedFail", "Score", "Error") == 1
    assert plugin_samples("timedFail", "Score", "Success") == 0


def test_filter_skipped_by_pre_filter_is_not_run() -> None:
    # "SuccessAndSkipFilters": the second plugin's PreFilter returned Skip, its Filter would Error.
    plugins = [
        make("TestPlugin1", PreFilterPlugin, FilterPlugin),
        make(
            "TestPlugin2",
            PreFilterPlugin,
            FilterPlugin,
            pre_filter=(None, Status(Code.SKIP)),
            filter=Status(Code.ERROR, "x"),
        ),
    ]
    fw = framework(
        plugins, {"preFilter": ["TestPlugin1", "TestPlugin2"], "filter": ["TestPlugin1", "TestPlugin2"]}
    )
    state = CycleState()
    fw.run_pre_filter_plugins(state, POD, [NODE])
    assert fw.run_filter_plugins(state, POD, NODE) is None
    assert names(fw.active_filters(state)) == ["TestPlugin1"]
    assert "TestPlugin2.filter" not in CALLS


def test_filter_plugins_with_nominated_pods() -> None:
    # TestFilterPluginsWithNominatedPods: pass 1 sees the nominated pod, pass 2 does not.
    seen: list[int] = []

    def fits_alone(state: CycleState, pod: Pod, ni: NodeInfo) -> Status | None:
        seen.append(len(ni.pods))
        return None if len(ni.pods) == 0 else Status(Code.UNSCHEDULABLE, "node is busy")

    fw = framework([make("OnePod", FilterPlugin, filter=fits_alone)], {"filter": ["OnePod"]})
    nominated_high = PodInfo(make_pod("nominated", priority=10))
    nominated_low = PodInfo(make_pod("low", priority=-1))
    pod = make_pod("p", priority=0)
    empty = node_info(make_node("n"))

    s = fw.run_filter_plugins_with_nominated_pods(CycleState(), pod, empty, [nominated_high])
    assert s is not None and (s.code, s.message(), s.plugin) == (Code.UNSCHEDULABLE, "node is busy", "OnePod")
    assert seen == [1] and len(empty.pods) == 0  # only the first pass ran; the node was not touched

    seen.clear()
    assert fw.run_filter_plugins_with_nominated_pods(CycleState(), pod, empty, [nominated_low]) is None
    assert seen == [0]  # lower priority nominated pods are ignored: a single pass

    seen.clear()
    always = framework([make("Always", FilterPlugin)], {"filter": ["Always"]})
    assert always.run_filter_plugins_with_nominated_pods(CycleState(), pod, empty, [nominated_high]) is None
    assert CALLS.count("Always.filter") == 2  # both passes ran


def test_filter_with_nominated_pods_adds_them_through_the_state_s_current_extensions() -> None:
    """The nominated pods go through the AddPod of the PreFilter plugins not skipped in this
    state, on every node of a pass; once PreFilter runs again and skips one, its AddPod no longer
    runs (the extensions are looked up once per state, never kept past its next PreFilter)."""
    skip_second = {"on": False}

    def second_pre_filter() -> Any:
        return (None, Status(Code.SKIP)) if skip_second["on"] else (None, None)

    plugins = [
        make("first", PreFilterPlugin, FilterPlugin, extensions=_Extensions("first")),
        make("second", PreFilterPlugin, extensions=_Extensions("second"), pre_filter=second_pre_filter),
    ]
    fw = framework(plugins, {"preFilter": ["first", "second"], "filter": ["first"]})
    nominated = PodInfo(make_pod("nominated", priority=10))
    pod = make_pod("p", priority=0)
    state = CycleState()
    fw.run_pre_filter_plugins(state, pod, [NODE])
    CALLS.clear()
    for n in ("a", "b"):
        assert (
            fw.run_filter_plugins_with_nominated_pods(state, pod, node_info(make_node(n)), [nominated])
            is None
        )
    assert [c for c in CALLS if "add_pod" in c] == [
        "first.add_pod(nominated)",
        "second.add_pod(nominated)",
    ] * 2
    skip_second["on"] = True
    fw.run_pre_filter_plugins(state, pod, [NODE])
    CALLS.clear()
    assert (
        fw.run_filter_plugins_with_nominated_pods(state, pod, node_info(make_node("c")), [nominated]) is None
    )
    assert [c for c in CALLS if "add_pod" in c] == ["first.add_pod(nominated)"]


def test_filter_with_nominated_pods_ignores_the_pod_itself() -> None:
    fw = framework([make("Always", FilterPlugin)], {"filter": ["Always"]})
    pod = make_pod("p")
    assert fw.run_filter_plugins_with_nominated_pods(CycleState(), pod, NODE, [PodInfo(pod)]) is None
    assert CALLS.count("Always.filter") == 1


# --- PostFilter (TestPostFilterPlugins) ------------------------------------------------------------


def _post(name: str, code: Code, result: PostFilterResult | None = None, reason: str = "") -> type[Plugin]:
    return make(name, PostFilterPlugin, post_filter=(result, Status(code, *([reason] if reason else []))))


POST_FILTER_CASES = [
    ("a single plugin makes a Pod schedulable", [("TestPlugin", Code.SUCCESS)], (Code.SUCCESS, "", "")),
    (
        "plugin1 failed to make a Pod schedulable, followed by plugin2 which makes the Pod schedulable",
        [("TestPlugin1", Code.UNSCHEDULABLE), ("TestPlugin2", Code.SUCCESS)],
        (Code.SUCCESS, "", ""),
    ),
    (
        "plugin1 makes a Pod schedulable, followed by plugin2 which cannot make the Pod schedulable",
        [("TestPlugin1", Code.SUCCESS), ("TestPlugin2", Code.UNSCHEDULABLE)],
        (Code.SUCCESS, "", ""),
    ),
    (
        "plugin1 failed to make a Pod schedulable, followed by plugin2 which makes the Pod schedulable",
        [("TestPlugin1", Code.ERROR), ("TestPlugin2", Code.SUCCESS)],
        (Code.ERROR, "r-TestPlugin1", "TestPlugin1"),
    ),
    (
        "plugin1 failed to make a Pod schedulable, followed by plugin2 which makes the Pod unresolvable",
        [("TestPlugin1", Code.UNSCHEDULABLE), ("TestPlugin2", Code.UNSCHEDULABLE_AND_UNRESOLVABLE)],
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "r-TestPlugin2", "TestPlugin2"),
    ),
    (
        "both plugins failed to make a Pod schedulable",
        [("TestPlugin1", Code.UNSCHEDULABLE), ("TestPlugin2", Code.UNSCHEDULABLE)],
        (Code.UNSCHEDULABLE, "r-TestPlugin1, r-TestPlugin2", "TestPlugin1"),
    ),
]


@pytest.mark.parametrize(
    ("plugins", "want"), [c[1:] for c in POST_FILTER_CASES], ids=[c[0] for c in POST_FILTER_CASES]
)
def test_post_filter_plugins(plugins: list[tuple[str, Code]], want: tuple[Code, str, str]) -> None:
    classes = [_post(n, c, reason="" if c is Code.SUCCESS else f"r-{n}") for n, c in plugins]
    fw = framework(classes, {"postFilter": [n for n, _ in plugins]})
    _, status = fw.run_post_filter_plugins(CycleState(), POD, {})
    got = (status.code, status.message(), status.plugin if status.code is not Code.SUCCESS else "")
    assert got == want


def test_post_filter_keeps_last_meaningful_result() -> None:
    nominate = PostFilterResult("n1", "override")
    plugins = [
        _post("A", Code.UNSCHEDULABLE, nominate, "a"),
        _post("B", Code.UNSCHEDULABLE, PostFilterResult(None, "noop"), "b"),
    ]
    fw = framework(plugins, {"postFilter": ["A", "B"]})
    result, status = fw.run_post_filter_plugins(CycleState(), POD, {})
    assert result == nominate
    assert (status.code, status.message(), status.plugin) == (Code.UNSCHEDULABLE, "a, b", "A")


# --- PreScore / Score (TestRunPreScorePlugins, TestRunScorePlugins) -----------------------------

NODES = [node_info(make_node("node1")), node_info(make_node("node2"))]


def _by_node(**scores: int) -> Callable[[NodeInfo], int]:
    return lambda ni: scores[ni.name]


def test_pre_score_skip_and_error() -> None:
    plugins = [
        make("skip", PreScorePlugin, ScorePlugin, pre_score=Status(Code.SKIP), score=50),
        make("ok", PreScorePlugin, ScorePlugin, score=10),
    ]
    fw = framework(plugins, {"preScore": ["skip", "ok"], "score": ["skip", "ok"]})
    state = CycleState()
    assert fw.run_pre_score_plugins(state, POD, NODES) is None
    assert state.skip_score_plugins == {"skip"}
    scores, status = fw.run_score_plugins(state, POD, NODES)
    assert status is None
    assert [(s.name, s.total, s.plugin_scores) for s in scores] == [
        ("node1", 10, {"ok": 10}),
        ("node2", 10, {"ok": 10}),
    ]
    assert "skip.score" not in CALLS

    bad = framework(
        [make("bad", PreScorePlugin, pre_score=Status(Code.UNSCHEDULABLE, "no"))], {"preScore": ["bad"]}
    )
    status2 = bad.run_pre_score_plugins(CycleState(), POD, NODES)
    assert status2 is not None and (status2.code, status2.message()) == (
        Code.ERROR,
        'running PreScore plugin "bad": no',
    )


@pytest.mark.parametrize(
    ("refs", "want"),
    [
        ([(PluginRef("s1", 1), {"node1": 1, "node2": 2})], [1, 2]),
        ([(PluginRef("s1"), {"node1": 1, "node2": 2})], [1, 2]),  # unset weight: 1
        ([(PluginRef("s1", 0), {"node1": 1, "node2": 2})], [1, 2]),  # weight 0 is coerced to 1
        ([(PluginRef("s1", 3), {"node1": 1, "node2": 2})], [3, 6]),
        (
            [
                (PluginRef("s1", 1), {"node1": 5, "node2": 0}),
                (PluginRef("s2", 3), {"node1": 10, "node2": 100}),
            ],
            [35, 300],
        ),
    ],
)
def test_score_weights(refs: list[tuple[PluginRef, dict[str, int]]], want: list[int]) -> None:
    plugins = [make(ref.name, ScorePlugin, score=_by_node(**sc)) for ref, sc in refs]
    fw = framework(plugins, {"score": [ref for ref, _ in refs]})
    scores, status = fw.run_score_plugins(CycleState(), POD, NODES)
    assert status is None
    assert [s.total for s in scores] == want
    # plugin_scores are the normalized scores before the weight
    assert scores[0].plugin_scores == {ref.name: sc["node1"] for ref, sc in refs}


def test_scores_are_named_by_node_and_a_ghost_by_the_empty_name() -> None:
    fw = framework([make("s1", ScorePlugin, score=3)], {"score": [PluginRef("s1", 1)]})
    scores, _ = fw.run_score_plugins(CycleState(), POD, NODES)
    assert [s.name for s in scores] == ["node1", "node2"]
    ghost = NodeInfo()  # pods left on a deleted node: no Node object
    scores, _ = fw.run_score_plugins(CycleState(), POD, [NODES[0], ghost])
    assert [(s.name, s.total) for s in scores] == [("node1", 3), ("", 3)]


def test_score_point_weight_wins_over_multi_point() -> None:
    plugin = make("s1", ScorePlugin, score=2)
    fw = framework([plugin], {"multiPoint": [PluginRef("s1", 7)], "score": [PluginRef("s1", 2)]})
    assert fw.score_weights == {"s1": 2}
    scores, _ = fw.run_score_plugins(CycleState(), POD, NODES)
    assert [s.total for s in scores] == [4, 4]


def test_normalize_score() -> None:
    def double(scores: list[int]) -> None:
        scores[:] = [s * 2 for s in scores]

    fw = framework(
        [make("norm", ScorePlugin, score=_by_node(node1=10, node2=40), normalize=double)], {"score": ["norm"]}
    )
    scores, status = fw.run_score_plugins(CycleState(), POD, NODES)
    assert status is None and [s.total for s in scores] == [20, 80]


@pytest.mark.parametrize(
    ("plugins", "message"),
    [
        (
            [make("bad", ScorePlugin, score=101)],
            'applying score defaultWeights on Score plugins: plugin "bad" returns an invalid score 101, '
            "it should in the range of [0, 100] after normalizing",
        ),
        (
            [make("bad", ScorePlugin, score=-1)],
            'applying score defaultWeights on Score plugins: plugin "bad" returns an invalid score -1, '
            "it should in the range of [0, 100] after normalizing",
        ),
        (
            [make("bad", ScorePlugin, score=50, normalize=lambda s: s.__setitem__(0, 1000))],
            'applying score defaultWeights on Score plugins: plugin "bad" returns an invalid score 1000, '
            "it should in the range of [0, 100] after normalizing",
        ),
        (
            [
                make(
                    "bad", ScorePlugin, score=50, normalize=lambda s: Status(Code.ERROR, "injected normalize")
                )
            ],
            'running Normalize on Score plugins: plugin "bad" failed with: injected normalize',
        ),
        (
            [make("bad", ScorePlugin, score=lambda ni: (_ for _ in ()).throw(PluginError("injected score")))],
            'running Score plugins: plugin "bad" failed with: injected score',
        ),
        (
            # Go runs every Score before any range check: the later plugin's failure is reported.
            [
                make("outOfRange", ScorePlugin, score=500),
                make("fails", ScorePlugin, score=lambda ni: (_ for _ in ()).throw(PluginError("injected"))),
            ],
            'running Score plugins: plugin "fails" failed with: injected',
        ),
        (
            # ... and every NormalizeScore before any range check.
            [
                make("outOfRange", ScorePlugin, score=500),
                make("normFails", ScorePlugin, score=1, normalize=lambda s: Status(Code.ERROR, "nope")),
            ],
            'running Normalize on Score plugins: plugin "normFails" failed with: nope',
        ),
    ],
)
def test_score_errors(plugins: list[type[Plugin]], message: str) -> None:
    fw = framework(plugins, {"score": [p.name for p in plugins]})
    scores, status = fw.run_score_plugins(CycleState(), POD, NODES)
    assert scores == []
    assert status is not None and status.code is Code.ERROR
    assert status.message() == message


def test_score_without_plugins() -> None:
    fw = framework([], {})
    scores, status = fw.run_score_plugins(CycleState(), POD, NODES)
    assert status is None and [(s.name, s.total) for s in scores] == [("node1", 0), ("node2", 0)]
    assert not fw.has_score_plugins() and not fw.has_filter_plugins()


# --- Reserve / Permit / PreBind / Bind / PostBind -----------------------------------------------


def test_reserve_stops_at_first_failure_and_unreserve_runs_all_in_reverse() -> None:
    plugins = [
        make("r1", ReservePlugin),
        make("r2", ReservePlugin, reserve=Status(Code.UNSCHEDULABLE, "no room")),
        make("r3", ReservePlugin),
    ]
    fw = framework(plugins, {"reserve": ["r1", "r2", "r3"]})
    s = fw.run_reserve_plugins_reserve(CycleState(), POD, "node")
    assert s is not None and (s.code, s.message(), s.plugin) == (Code.UNSCHEDULABLE, "no room", "r2")
    fw.run_reserve_plugins_unreserve(CycleState(), POD, "node")
    assert CALLS == ["r1.reserve", "r2.reserve", "r3.unreserve", "r2.unreserve", "r1.unreserve"]


def test_reserve_error_is_wrapped() -> None:
    fw = framework([make("r", ReservePlugin, reserve=Status(Code.ERROR, "boom"))], {"reserve": ["r"]})
    s = fw.run_reserve_plugins_reserve(CycleState(), POD, "node")
    assert s is not None and (s.code, s.message()) == (Code.ERROR, 'running Reserve plugin "r": boom')
    assert (
        framework([make("ok", ReservePlugin)], {"reserve": ["ok"]}).run_reserve_plugins_reserve(
            CycleState(), POD, "node"
        )
        is None
    )


PERMIT_CASES = [
    ("nil", [], None, 0.0),
    ("success", [("p", (None, 0.0))], None, 0.0),
    (
        "rejected",
        [("p", (Status(Code.UNSCHEDULABLE, "injected"), 0.0)), ("q", (None, 0.0))],
        (Code.UNSCHEDULABLE, "injected", "p"),
        0.0,
    ),
    (
        "error",
        [("p", (Status(Code.ERROR, "injected"), 0.0))],
        (Code.ERROR, 'running Permit plugin "p": injected', "p"),
        0.0,
    ),
    (
        "unschedulable and unresolvable",
        [("p", (Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "injected"), 0.0))],
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "injected", "p"),
        0.0,
    ),
    (
        "wait: shortest timeout, capped at 15 minutes",
        [("p", (Status(Code.WAIT, "wait for gang"), 3600.0)), ("q", (Status(Code.WAIT), 7200.0))],
        (Code.WAIT, "one or more plugins asked to wait and no plugin rejected pod", ""),
        MAX_PERMIT_TIMEOUT,
    ),
    (
        "wait keeps the waiting plugin's reasons",
        [("p", (Status(Code.WAIT, "wait for gang"), 10.0)), ("q", (None, 0.0))],
        (Code.WAIT, "wait for gang, one or more plugins asked to wait and no plugin rejected pod", ""),
        10.0,
    ),
    (
        "a rejection after a wait wins",
        [("p", (Status(Code.WAIT), 10.0)), ("q", (Status(Code.UNSCHEDULABLE, "no"), 0.0))],
        (Code.UNSCHEDULABLE, "no", "q"),
        0.0,
    ),
]


@pytest.mark.parametrize(
    ("plugins", "want", "timeout"), [c[1:] for c in PERMIT_CASES], ids=[c[0] for c in PERMIT_CASES]
)
def test_permit_plugins(
    plugins: list[tuple[str, tuple[Status | None, float]]], want: tuple[Code, str, str] | None, timeout: float
) -> None:
    fw = framework([make(n, PermitPlugin, permit=r) for n, r in plugins], {"permit": [n for n, _ in plugins]})
    status, got_timeout = fw.run_permit_plugins(CycleState(), POD, "node")
    assert (None if status is None else (status.code, status.message(), status.plugin)) == want
    assert got_timeout == timeout


def test_pre_bind_first_failure() -> None:
    plugins = [
        make("pb1", PreBindPlugin),
        make("pb2", PreBindPlugin, pre_bind=Status(Code.ERROR, "volume")),
        make("pb3", PreBindPlugin),
    ]
    fw = framework(plugins, {"preBind": ["pb1", "pb2", "pb3"]})
    s = fw.run_pre_bind_plugins(CycleState(), POD, "node")
    assert s is not None and (s.code, s.message()) == (Code.ERROR, 'running PreBind plugin "pb2": volume')
    assert CALLS == ["pb1.pre_bind", "pb2.pre_bind"]
    rejecting = framework(
        [make("r", PreBindPlugin, pre_bind=Status(Code.UNSCHEDULABLE, "x"))], {"preBind": ["r"]}
    )
    s = rejecting.run_pre_bind_plugins(CycleState(), POD, "node")
    assert s is not None and (s.code, s.plugin) == (Code.UNSCHEDULABLE, "r")


PRE_FLIGHT_CASES = [
    # (name, each plugin's PreBindPreFlight answer, want (code, message) or None, PreBind calls)
    ("no PreBind plugins: Skip", [], (Code.SKIP, ""), []),
    ("all skip", [("a", Status(Code.SKIP)), ("b", Status(Code.SKIP))], (Code.SKIP, ""), []),
    ("one has work", [("a", Status(Code.SKIP)), ("b", None)], None, ["b.pre_bind"]),
    (
        "an error names the plugin",
        [("a", None), ("b", Status(Code.ERROR, "state missing"))],
        (Code.ERROR, 'running PreBindPreFlight "b": state missing'),
        ["a.pre_bind", "b.pre_bind"],
    ),
    (
        "a rejection is unsupported",
        [("a", Status(Code.UNSCHEDULABLE, "no"))],
        (
            Code.ERROR,
            'PreBindPreFlight a returned "Unschedulable", which is unsupported. '
            "It is supposed to return Success, Skip, or Error status",
        ),
        ["a.pre_bind"],
    ),
]


@pytest.mark.parametrize(
    ("answers", "want", "pre_binds"),
    [c[1:] for c in PRE_FLIGHT_CASES],
    ids=[c[0] for c in PRE_FLIGHT_CASES],
)
def test_pre_bind_pre_flights(
    answers: list[tuple[str, Status | None]], want: tuple[Code, str] | None, pre_binds: list[str]
) -> None:
    # RunPreBindPreFlights: Success if any plugin has work, Skip if none; the skipped ones' PreBind
    # is not called (an error or refused code stops the binding cycle before PreBind in kube).
    plugins = [make(n, PreBindPlugin, pre_bind_pre_flight=a) for n, a in answers]
    fw = framework(plugins, {"preBind": [n for n, _ in answers]})
    state = CycleState()
    s = fw.run_pre_bind_pre_flights(state, POD, "node")
    assert (None if s is None else (s.code, s.message())) == want
    CALLS.clear()
    assert fw.run_pre_bind_plugins(state, POD, "node") is None
    assert pre_binds == CALLS


BIND_CASES = [
    ("first binder binds", [("b1", None), ("b2", None)], (Code.SUCCESS, "", "b1"), ["b1.bind"]),
    (
        "skip goes to the next",
        [("b1", Status(Code.SKIP)), ("b2", None)],
        (Code.SUCCESS, "", "b2"),
        ["b1.bind", "b2.bind"],
    ),
    (
        "all skip",
        [("b1", Status(Code.SKIP)), ("b2", Status(Code.SKIP))],
        (Code.SKIP, "", ""),
        ["b1.bind", "b2.bind"],
    ),
    (
        "error stops",
        [("b1", Status(Code.ERROR, "api down")), ("b2", None)],
        (Code.ERROR, 'running Bind plugin "b1": api down', "b1"),
        ["b1.bind"],
    ),
    (
        "rejection is kept",
        [("b1", Status(Code.UNSCHEDULABLE, "conflict")), ("b2", None)],
        (Code.UNSCHEDULABLE, "conflict", "b1"),
        ["b1.bind"],
    ),
]


@pytest.mark.parametrize(
    ("plugins", "want", "calls"), [c[1:] for c in BIND_CASES], ids=[c[0] for c in BIND_CASES]
)
def test_bind_plugins(
    plugins: list[tuple[str, Status | None]], want: tuple[Code, str, str], calls: list[str]
) -> None:
    classes = [make(n, BindPlugin, bind=s) for n, s in plugins]
    fw = framework(classes, {"bind": [n for n, _ in plugins]})
    status = fw.run_bind_plugins(CycleState(), POD, "node")
    assert (status.code, status.message(), status.plugin) == want
    assert calls == CALLS


def test_post_bind_runs_all() -> None:
    fw = framework([make("pb1", PostBindPlugin), make("pb2", PostBindPlugin)], {"postBind": ["pb1", "pb2"]})
    fw.run_post_bind_plugins(CycleState(), POD, "node")
    assert CALLS == ["pb1.post_bind", "pb2.post_bind"]


def test_pre_enqueue_first_rejection() -> None:
    from app.framework.interfaces import PreEnqueuePlugin

    class Gate(PreEnqueuePlugin):
        name: ClassVar[str] = "Gate"

        def pre_enqueue(self, pod: Pod) -> Status | None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "gated") if pod.scheduling_gates else None

    fw = framework([Gate], {"preEnqueue": ["Gate"]})
    assert fw.run_pre_enqueue_plugins(make_pod("free")) is None
    s = fw.run_pre_enqueue_plugins(make_pod("gated", schedulingGates=[{"name": "g"}]))
    assert s is not None and (s.message(), s.plugin) == ("gated", "Gate")


def test_best_scores_are_the_highest_totals_detached_from_the_run() -> None:
    fit, spread = [10, 40, 20, 50], [20, 50, 40, 40]
    scores = NodeScores(["a", "b", "c", "d"], [30, 90, 60, 90], (["Fit", "Spread"], [fit, spread]))
    best = scores.best(3)
    assert [(s.name, s.total) for s in best] == [("b", 90), ("d", 90), ("c", 60)]
    fit[3] = 0  # the run's columns may go (or be reused): the kept scores are their own
    assert best[1].plugin_scores == {"Fit": 50, "Spread": 40}


def test_compacted_scores_read_as_the_originals() -> None:
    fit, spread = [10, 40, 20, 50], [20, 50, 40, 40]
    scores = NodeScores(["a", "b", "c", "d"], [300, 900, 600, 900], (["Fit", "Spread"], [fit, spread]))
    compact = scores.compacted()
    assert list(compact) == list(scores)
    assert [s.total for s in compact] == [300, 900, 600, 900]
    assert compact.best(2) == scores.best(2)
    # An extender's unchecked weighted total past 32 bits is kept as it is.
    huge = NodeScores(["a", "b"], [2**40, -(2**40)], (["Ext"], [[2**40, -(2**40)]]))
    assert [s.total for s in huge.compacted()] == [2**40, -(2**40)]
    assert [s.plugin_scores for s in huge.compacted()] == [{"Ext": 2**40}, {"Ext": -(2**40)}]


def test_compacted_constant_columns_and_runs_of_names_read_as_the_originals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kept scores keep a column where every node scored the same as one shared object, and node
    names that are consecutive in the table of names as a range, also when they run past the
    table's end and on from its start: every read (index, slice, iteration, plugin scores, best)
    answers as the original scores do."""
    from app.framework import runtime

    monkeypatch.setattr(runtime, "_name_table", runtime._NameTable())
    names = ["n0", "n1", "n2", "n3", "n4"]
    fit, taint = [10, 40, 20, 50, 30], [100] * 5
    scores = NodeScores(names, [110, 140, 120, 150, 130], (["Fit", "Taint"], [fit, taint]))
    compact = scores.compacted()
    assert list(compact) == list(scores) and compact.best(2) == scores.best(2)
    assert isinstance(compact.names, runtime.InternedNames) and list(compact.names) == names
    kept_fit, kept_taint = compact._columns[1]
    assert list(kept_fit) == fit and list(kept_taint) == taint
    assert kept_taint[-1] == 100 and kept_taint[1:3] == [100, 100] and len(kept_taint) == 5
    with pytest.raises(IndexError):
        kept_taint[5]
    again = NodeScores(names, [1] * 5, (["Fit", "Taint"], [[1, 2, 3, 4, 5], [100] * 5])).compacted()
    assert again._columns[1][1] is kept_taint  # one object for every kept column of 100 on 5 nodes
    assert again._columns[0] is compact._columns[0]  # and one tuple of plugin names
    # Nodes scored from the fourth of the table's five on: n3, n4, n0, n1.
    wrapped = ["n3", "n4", "n0", "n1"]
    kept = NodeScores(wrapped, [4, 3, 2, 1], (["Fit"], [[4, 3, 2, 1]])).compacted()
    assert list(kept.names) == wrapped and kept.names[2] == "n0" and kept.names[-1] == "n1"
    assert kept.names[1:3] == ["n4", "n0"] and [s.name for s in kept] == wrapped
    # Out of order: kept index by index.
    shuffled = ["n2", "n0", "n4"]
    assert list(NodeScores(shuffled, [1, 2, 3], (["Fit"], [[1, 2, 3]])).compacted().names) == shuffled


def test_compacted_names_survive_a_new_name_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept scores name their nodes by index into a table of names; when a table is full a new one
    starts and scores kept before still read their own names (node churn never grows one table)."""
    from app.framework import runtime

    monkeypatch.setattr(runtime._NameTable, "LIMIT", 6)
    monkeypatch.setattr(runtime, "_name_table", runtime._NameTable())
    first = NodeScores(["a", "b", "c"], [1, 2, 3], (["Fit"], [[1, 2, 3]])).compacted()
    second = NodeScores(["x", "y", "z", "w"], [4, 5, 6, 7], (["Fit"], [[4, 5, 6, 7]])).compacted()
    assert [s.name for s in first] == ["a", "b", "c"] and list(first.names[1:]) == ["b", "c"]
    assert [s.name for s in second] == ["x", "y", "z", "w"]
    # More names than a table holds are kept as they were given.
    many = ["n1", "n2", "n3", "n4", "n5", "n6", "n7"]
    assert NodeScores(many, [0] * 7, (["Fit"], [[0] * 7])).compacted().names is many
