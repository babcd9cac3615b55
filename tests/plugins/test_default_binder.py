"""DefaultBinder, after plugins/defaultbinder/default_binder_test.go (v1.36.3).

The Go test drives a fake clientset and the async API dispatcher; here the binder is the handle's
(a RecordingBinder in tests), so the port checks the binding goes there and errors come back.
"""

from __future__ import annotations

from app.api.objects import Pod, parse_pod
from app.framework.cycle_state import CycleState
from app.framework.status import Code, Status, error
from app.plugins.defaultbinder.default_binder import DefaultBinder
from builders import make_pod, pod_dict
from fakes import FakeHandle

TEST_NODE = "foohost.kubernetes.mydomain.com"


class FailingBinder:
    def bind(self, pod: Pod, node_name: str) -> Status | None:
        return error("binding error")


def test_successful() -> None:
    handle = FakeHandle()
    pod = parse_pod(pod_dict("foo", namespace="ns"))
    assert DefaultBinder(None, handle).bind(CycleState(), pod, TEST_NODE) is None
    assert handle.binder.bound == [("ns/foo", TEST_NODE)]


def test_binding_error() -> None:
    handle = FakeHandle()
    handle.binder = FailingBinder()  # type: ignore[assignment]
    got = DefaultBinder(None, handle).bind(CycleState(), make_pod("foo"), TEST_NODE)
    assert got is not None and got.code is Code.ERROR and got.message() == "binding error"
