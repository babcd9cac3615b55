"""DiskSpeed (examples/plugins/disk_speed.py): its args, Filter, Score, PluginError, and berth running it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from disk_speed import DiskSpeed, DiskSpeedArgs

from app.api.errors import FieldError
from app.cli.main import main
from app.framework.cycle_state import CycleState
from app.framework.interfaces import PluginError
from app.framework.registry import Registry
from app.framework.status import Code
from app.framework.types import NodeInfo
from builders import make_node, make_pod
from fakes import FakeHandle

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plugins"
STATE = EXAMPLES / "disk-speed-state.yaml"
CONFIG = EXAMPLES / "disk-speed-config.yaml"


def disk(name: str, mbps: str | None) -> NodeInfo:
    """A node whose disk label says ``mbps`` (no label when None)."""
    labels = {"example.com/disk-mbps": mbps} if mbps is not None else {}
    return NodeInfo(make_node(name, labels=labels))


def plugin(minimum_mbps: int = 0) -> DiskSpeed:
    """DiskSpeed with the default label, as the configuration loader builds it."""
    return DiskSpeed(DiskSpeedArgs(minimum_mbps=minimum_mbps), FakeHandle())


def test_args_default_and_decode_strictly() -> None:
    assert DiskSpeedArgs.decode(None, "args") == DiskSpeedArgs("example.com/disk-mbps", 0)
    assert DiskSpeedArgs.decode({"minimumMBps": 200}, "args").to_dict() == {
        "label": "example.com/disk-mbps",
        "minimumMBps": 200,
    }
    with pytest.raises(FieldError, match=r'^args\.speed: unknown field "speed"$'):
        DiskSpeedArgs.decode({"speed": 1}, "args")
    with pytest.raises(FieldError, match=r"^args\.minimumMBps: Invalid value: -1"):
        DiskSpeedArgs.decode({"minimumMBps": -1}, "args")


def test_filter_rejects_nodes_slower_than_the_minimum() -> None:
    pl, pod = plugin(minimum_mbps=200), make_pod("db")
    assert pl.filter(CycleState(), pod, disk("ssd", "500")) is None
    for slow in (disk("hdd", "120"), disk("bare", None)):
        status = pl.filter(CycleState(), pod, slow)
        assert status is not None and status.code is Code.UNSCHEDULABLE
        assert status.reasons == ["node(s) had a disk slower than 200 MB/s"]


def test_scores_scale_to_the_fastest_node() -> None:
    pl, pod = plugin(), make_pod("db")
    nodes = [disk("nvme", "2000"), disk("ssd", "500"), disk("bare", None)]
    scores = [pl.score(CycleState(), pod, n) for n in nodes]
    assert scores == [2000, 500, 0]
    assert pl.normalize_score(CycleState(), pod, nodes, scores) is None
    assert scores == [100, 25, 0]


def test_a_label_that_is_not_a_number_raises_plugin_error() -> None:
    with pytest.raises(
        PluginError, match=r'node ssd: label example.com/disk-mbps="fast" is not a whole number'
    ):
        plugin().score(CycleState(), make_pod("db"), disk("ssd", "fast"))


def test_berth_simulate_places_the_pod_on_the_fastest_disk(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", str(STATE), "--plugin-module", "disk_speed", "--config", str(CONFIG), "-o", "json"]
    assert main(argv) == 0
    (pod,) = json.loads(capsys.readouterr().out)["pods"]
    assert pod["node"] == "nvme"
    assert pod["filter"]["hdd"]["reasons"] == ["node(s) had a disk slower than 200 MB/s"]
    assert (pod["scores"]["nvme"]["DiskSpeed"], pod["scores"]["ssd"]["DiskSpeed"]) == (100, 25)


def test_a_plugin_error_fails_the_attempt_naming_the_node(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(STATE.read_text().replace('"500"', '"fast"'))
    argv = ["simulate", str(broken), "--plugin-module", "disk_speed", "--config", str(CONFIG), "-o", "json"]
    assert main(argv) == 0
    (pod,) = json.loads(capsys.readouterr().out)["pods"]
    assert pod["status"] == "Error"
    assert 'node ssd: label example.com/disk-mbps="fast" is not a whole number' in pod["message"]


def test_an_entry_point_registers_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``pip install`` of a package with a ``berth.plugins`` entry point leaves behind."""
    dist = tmp_path / "berth_disk_speed-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: berth-disk-speed\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[berth.plugins]\nDiskSpeed = disk_speed:DiskSpeed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry()
    registry.load_entry_points()
    assert registry.get("DiskSpeed") is DiskSpeed
    assert registry.extension_points("DiskSpeed") == {"filter", "score"}
