"""The Dockerfile, checked without a Docker engine (there is none on these machines).

What can be checked here is checked against the repository itself: the Python it pins is the one
pyproject.toml targets; every path it copies exists and passes .dockerignore; the wheel it builds
has its package and readme; the builder's requirements are exactly the locked runtime dependencies;
the final stage installs offline from the builder's wheels (no compiler, no index), runs as a
numeric non-root user (what ``runAsNonRoot`` can verify), and its entrypoint is pyproject's
``berth`` script, which starts; the ports it exposes are berth's defaults and the manifests'
containerPorts; the version label is the package version; there is no HEALTHCHECK (Kubernetes probes
the pods instead).
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import re
import shlex
import shutil
import subprocess
import tomllib
from dataclasses import dataclass

import pytest
from deploy.manifests import MANIFESTS

from app import __version__
from app.cli import run as run_cli
from app.cli import serve as serve_cli
from app.cli.main import build_parser
from kube.controlplane import REPO_ROOT

DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction, its continuation lines joined."""

    keyword: str
    value: str
    stage: int  # index of the FROM it belongs to (-1 before the first)


def parse(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile: comments dropped, ``\\`` continuations joined."""
    out: list[Instruction] = []
    stage = -1
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, value = full.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        out.append(Instruction(keyword, value.strip(), stage))
    assert not pending, "the Dockerfile ends inside a continued instruction"
    return out


INSTRUCTIONS = parse(DOCKERFILE.read_text())
FINAL = max(i.stage for i in INSTRUCTIONS)


def _all(keyword: str, stage: int | None = None) -> list[str]:
    return [i.value for i in INSTRUCTIONS if i.keyword == keyword and (stage is None or i.stage == stage)]


def _args() -> dict[str, str]:
    """``ARG NAME=default`` values (the last one wins)."""
    out = {}
    for value in _all("ARG"):
        name, _, default = value.partition("=")
        out[name] = default.strip('"')
    return out


def _flags(value: str) -> tuple[dict[str, str], list[str]]:
    """An instruction's ``--flag=value`` options and its other words."""
    words = shlex.split(value)
    flags = dict(w[2:].split("=", 1) for w in words if w.startswith("--") and "=" in w)
    return flags, [w for w in words if not w.startswith("--")]


def test_two_stages_on_the_same_slim_python() -> None:
    froms = _all("FROM")
    assert len(froms) == 2, froms
    assert froms[0] == "python:${PYTHON_VERSION}-slim AS builder"
    assert froms[1] == "python:${PYTHON_VERSION}-slim"


def test_the_pinned_python_is_the_one_pyproject_targets() -> None:
    version = _args()["PYTHON_VERSION"]
    assert re.fullmatch(r"3\.\d+", version), version
    assert PYPROJECT["project"]["requires-python"] == f">={version}"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == version
    assert PYPROJECT["tool"]["ruff"]["target-version"] == "py" + version.replace(".", "")


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore rule: the last pattern matching the path (or one of its parents) decides."""
    parts = path.split("/")
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        pat = pattern[1:] if negated else pattern
        pat = pat.rstrip("/")
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(
            fnmatch.fnmatchcase(c, pat) or fnmatch.fnmatchcase(c, pat.replace("**/", "")) for c in candidates
        ):
            ignored = not negated
    return ignored


def _dockerignore() -> list[str]:
    return [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]


def _copied() -> list[str]:
    """The build-context sources of every COPY without --from."""
    sources = []
    for value in _all("COPY"):
        flags, words = _flags(value)
        if "from" not in flags:
            sources += words[:-1]
    return sources


def test_every_copied_path_exists_and_is_in_the_build_context() -> None:
    patterns = _dockerignore()
    sources = _copied()
    assert {"pyproject.toml", "uv.lock", "README.md", "app"} <= set(sources), sources
    for source in sources:
        path = REPO_ROOT / source
        assert path.exists(), f"COPY {source}: no such path"
        files = [path] if path.is_file() else [p for p in path.rglob("*.py") if "__pycache__" not in p.parts]
        for f in files:
            rel = f.relative_to(REPO_ROOT).as_posix()
            assert not _ignored(rel, patterns), f"{rel} is copied but .dockerignore excludes it"
    # Nothing else is sent: the tests, the manifests, the virtualenv stay out of the context.
    for other in ("tests/deploy/test_dockerfile.py", "manifests/standalone/config.yaml", ".venv/bin/python"):
        assert _ignored(other, patterns), other
    assert _ignored("app/__pycache__/main.cpython-311.pyc", patterns)


def test_the_wheel_has_the_copied_package_and_readme() -> None:
    packages = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    sources = set(_copied())
    assert set(packages) <= sources, packages
    assert PYPROJECT["project"]["readme"] in sources  # hatchling reads it for the metadata


def test_the_builder_exports_exactly_the_locked_runtime_dependencies() -> None:
    run = " && ".join(_all("RUN", 0))
    command = re.search(r"uv export [^&]*", run)
    assert command is not None, run
    argv = shlex.split(command.group(0))
    assert {"--frozen", "--no-dev", "--no-emit-project"} <= set(argv)
    uv = shutil.which("uv")
    assert uv is not None, "uv is not installed (make install installs it)"
    out = subprocess.run(
        [uv, *argv[1 : argv.index("--output-file")], "--no-header"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    pinned = {m.group(1).lower() for m in re.finditer(r"^([A-Za-z0-9_.-]+)==", out, re.MULTILINE)}
    for dep in PYPROJECT["project"]["dependencies"]:
        name = re.match(r"[A-Za-z0-9_.-]+", dep)
        assert name is not None and name.group(0).lower() in pinned, dep
    for dev in PYPROJECT["dependency-groups"]["dev"]:
        name = re.match(r"[A-Za-z0-9_.-]+", dev)
        assert name is not None and name.group(0).lower() not in pinned, f"dev dependency {dev} in the image"
    assert "berth" not in pinned
    assert "--wheel-dir /wheels --requirement requirements.txt" in run


def test_the_final_stage_installs_offline_from_the_wheels_without_a_compiler() -> None:
    runs = _all("RUN", FINAL)
    assert len(runs) == 1, runs
    run = runs[0]
    assert "--mount=type=bind,from=builder,source=/wheels,target=/wheels" in run
    assert f"pip install --no-cache-dir --no-index --find-links=/wheels {PYPROJECT['project']['name']}" in run
    assert not re.search(r"apt-get|apk |gcc|build-essential|uv ", run), run
    assert not _all("COPY", FINAL), "the final stage copies nothing (the wheels come through a bind mount)"


def test_a_numeric_non_root_user() -> None:
    (user,) = _all("USER", FINAL)
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid.isdigit() and int(gid) != 0, user
    run = _all("RUN", FINAL)[0]
    assert f"useradd --uid {uid} --gid {gid}" in run
    # The pods' securityContext runs as the same user (runAsNonRoot can check a numeric USER only).
    for manifest in MANIFESTS.rglob("*.yaml"):
        for match in re.finditer(r"runAsUser: (\d+)", manifest.read_text()):
            assert match.group(1) == uid, manifest


def test_the_entrypoint_is_the_berth_script_and_it_starts(capsys: pytest.CaptureFixture[str]) -> None:
    (entrypoint,) = _all("ENTRYPOINT")
    assert json.loads(entrypoint) == ["berth"]
    (cmd,) = _all("CMD")
    assert json.loads(cmd) == ["--help"]
    module, _, function = PYPROJECT["project"]["scripts"]["berth"].partition(":")
    script = getattr(importlib.import_module(module), function)
    # What the image runs by default, `berth --help`: the script's function with CMD's arguments (in
    # process: a fresh interpreter costs many seconds on a loaded machine and proves nothing more).
    with pytest.raises(SystemExit) as exited:
        script(json.loads(cmd))
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("usage: berth")
    for command in ("run", "serve"):  # the sub-commands the manifests run
        assert build_parser().parse_args([command]).command == command


def test_the_exposed_ports_are_berths_defaults_and_the_manifests_ports() -> None:
    exposed = {int(p) for value in _all("EXPOSE") for p in value.split()}
    serve = build_parser().parse_args(["serve"])
    run = build_parser().parse_args(["run"])
    assert exposed == {serve.port, serve.secure_port, run.secure_port}
    assert (serve.secure_port, run.secure_port) == (
        serve_cli.DEFAULT_SECURE_PORT,
        run_cli.DEFAULT_SECURE_PORT,
    )
    berth_ports = set()
    for manifest in MANIFESTS.rglob("*.yaml"):
        text = manifest.read_text()
        if "image: berth" in text:
            berth_ports |= {
                int(p) for p in re.findall(r"containerPort: (\d+)", text.split("image: berth", 1)[1])
            }
    assert berth_ports and berth_ports <= exposed, berth_ports


def test_labels_name_the_version_and_source_and_there_is_no_healthcheck() -> None:
    labels = dict(
        (k, v.strip('"')) for k, v in re.findall(r'([\w.]+)="?([^"\s]*)"?', " ".join(_all("LABEL", FINAL)))
    )
    assert labels["org.opencontainers.image.version"] == "${VERSION}"
    assert labels["org.opencontainers.image.source"] == "${SOURCE}"
    assert _args()["VERSION"] == PYPROJECT["project"]["version"] == __version__
    assert not _all("HEALTHCHECK")


@pytest.mark.parametrize("stage", [0, 1], ids=["builder", "final"])
def test_no_secret_or_cache_is_left_in_a_layer(stage: int) -> None:
    for run in _all("RUN", stage):
        if "pip " in run:
            assert "--no-cache-dir" in run, run
