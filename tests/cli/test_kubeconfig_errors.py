"""Malformed kubeconfigs and $KUBECONFIG: one clear line from ``berth run`` and ``berth serve``, no traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli.test_serve import free_port
from server.chainkit import LogCapture, capture_logs
from server.conftest import build_app

from app.cli.main import build_parser, main
from app.cli.serving import secure_listener

MALFORMED = {
    "not-yaml": (": : :\n\t-", "invalid kubeconfig"),
    "a-list": ("[1, 2]", "invalid kubeconfig"),
    "users-not-a-list": (
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\nusers: {a: 1}\n",
        "invalid kubeconfig",
    ),
    "no-such-context": ("apiVersion: v1\nkind: Config\ncurrent-context: nope\n", "invalid kubeconfig"),
}
GOOD = (
    "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
    "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\nusers: [{name: u, user: {token: t}}]\n"
)


def argv_of(command: str) -> list[str]:
    if command == "serve":
        return ["serve", "--port", str(free_port()), "--secure-port", "0"]
    return ["run", "--secure-port", "0"]


@pytest.mark.parametrize("command", ["run", "serve"])
@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_kubeconfig_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, case: str
) -> None:
    text, expected = MALFORMED[case]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(text)
    assert main([*argv_of(command), "--kubeconfig", str(kubeconfig)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"Error: {expected} {kubeconfig}: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("command", ["run", "serve"])
def test_a_malformed_kubeconfig_env_is_named_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("[1, 2]")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    # berth serve connects only when asked; --master alone still reads $KUBECONFIG's credentials.
    args = argv_of(command) + (["--master", "https://127.0.0.1:1"] if command == "serve" else [])
    assert main(args) == 1
    assert f"invalid kubeconfig {kubeconfig}" in capsys.readouterr().err


def test_no_cluster_configuration_says_how_to_give_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    assert main(argv_of("run")) == 1
    err = capsys.readouterr().err
    assert "--kubeconfig" in err and "$KUBECONFIG" in err and "in-cluster" in err


def test_run_help_says_where_the_kubeconfig_comes_from(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "$KUBECONFIG, else ~/.kube/config, else the in-cluster config" in out


@pytest.fixture
def v0() -> Iterator[LogCapture]:
    yield from capture_logs(0)


def test_kubeconfig_from_the_environment_serves_delegated_auth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, v0: LogCapture
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(GOOD)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    args = build_parser().parse_args(
        ["run", "--secure-port", str(free_port()), "--bind-address", "127.0.0.1"]
    )
    closers: list[object] = []
    listener = secure_listener(args, build_app(), name="berth-test", closers=closers)  # type: ignore[arg-type]
    for close in closers:
        close()  # type: ignore[operator]
    assert listener is not None
    warnings = [r.getMessage() for r in v0.records]
    assert not [w for w in warnings if "won't work" in w], warnings
