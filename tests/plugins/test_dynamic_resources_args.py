"""DynamicResourcesArgs: SetDefaults_DynamicResourcesArgs and ValidateDynamicResourcesArgs (v1.36.3)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app import featuregates
from app.api.errors import FieldError
from app.plugins.dynamicresources.args import DynamicResourcesArgs


@pytest.fixture(autouse=True)
def _reset_gates() -> Iterator[None]:
    yield
    featuregates.DEFAULT.reset()


def test_defaults() -> None:
    args = DynamicResourcesArgs.decode(None, "args")
    assert (args.filter_timeout, args.binding_timeout) == (10.0, 600.0)
    assert args.to_dict() == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "DynamicResourcesArgs",
        "bindingTimeout": "10m0s",
        "filterTimeout": "10s",
    }


def test_explicit_values_and_zero_filter_timeout() -> None:
    args = DynamicResourcesArgs.decode({"filterTimeout": "0s", "bindingTimeout": "30s"}, "args")
    assert (args.filter_timeout, args.binding_timeout) == (0.0, 30.0)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"filterTimeout": "-1s"}, 'args.filterTimeout: Invalid value: "-1s": must be zero or positive'),
        (
            {"bindingTimeout": "500ms"},
            'args.bindingTimeout: Invalid value: "500ms": must be at least 1 second',
        ),
    ],
)
def test_validation(raw: dict[str, str], message: str) -> None:
    with pytest.raises(FieldError) as err:
        DynamicResourcesArgs.decode(raw, "args")
    assert message in str(err.value)


def test_fields_of_disabled_gates_are_forbidden() -> None:
    featuregates.DEFAULT.set("DRASchedulerFilterTimeout=false,DRADeviceBindingConditions=false")
    assert DynamicResourcesArgs.decode(None, "args").to_dict() == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "DynamicResourcesArgs",
    }
    with pytest.raises(FieldError) as err:
        DynamicResourcesArgs.decode({"filterTimeout": "5s", "bindingTimeout": "1m"}, "args")
    assert "args.filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled" in str(
        err.value
    )
    assert (
        "args.bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus "
        "feature gate is disabled"
    ) in str(err.value)
