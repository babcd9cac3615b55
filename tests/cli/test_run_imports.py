"""``berth run``'s start-up loads only what it uses: the simulator (for ``/debug/pods``' explanations)
comes on the first request, uvicorn without its command line (click).

Each case runs in a fresh interpreter: this test process has imported everything long ago.
"""

from __future__ import annotations

import json

from tests.fresh_interpreter import run_python

# What berth run's start-up must not import: the simulator's report and runner (~16 MiB with what they
# bring), uvicorn's command line and click (~5 MiB), the kubernetes client's generated models, and
# cryptography (~12 MiB: only making a self-signed pair and reading certificates need it, and a child
# process does that: app.server.x509tool), and OIDC token refresh's requests_oauthlib and oauthlib
# and the kubernetes ApiClient's date parser and thread pool (~2.5 MiB together: app.kube.k8s), and
# requests' encoding detection (charset_normalizer, ~3 MiB with its compiled modules: app.kube.k8s).
NOT_AT_START = (
    "app.simulate.report",
    "app.simulate.runner",
    "app.simulate.state",
    "app.simulate.hints",
    "click",
    "uvicorn.main",
    "kubernetes.client.models.v1_pod",
    "cryptography",
    "requests_oauthlib.oauth2_session",
    "oauthlib.oauth2.rfc6749",
    "dateutil.parser._parser",
    "multiprocessing.connection",
    "charset_normalizer.md",
)


def run(code: str) -> dict[str, object]:
    result: dict[str, object] = json.loads(run_python(code).splitlines()[-1])
    return result


def test_the_start_path_serves_health_without_the_simulator_or_click() -> None:
    """The parser built and ``run``'s flags parsed, the modules its setup uses imported, and the
    component app served over HTTP (the lifespan included) as berth run serves it."""
    out = run(
        f"""
        import json, sys, urllib.request
        from app.cli.main import build_parser
        args = build_parser().parse_args(["run", "--leader-elect=false", "--secure-port=0"])
        import app.standalone.run, app.standalone.setup, app.standalone.endpoints
        from app.server.app import create_component_app
        from app.server.httpserver import HttpServer, Listener
        server = HttpServer([Listener(create_component_app(config_dump={{}}, version="v0"), "127.0.0.1", 0)], name="t")
        server.start()
        with urllib.request.urlopen(f"http://127.0.0.1:{{server.port}}/healthz") as answer:
            health = answer.read().decode()
        server.shutdown()
        print(json.dumps({{
            "command": args.command,
            "healthz": health,
            "loaded": [m for m in {list(NOT_AT_START)!r} if m in sys.modules],
        }}))
        """
    )
    assert out == {"command": "run", "healthz": "ok", "loaded": []}


def test_the_serving_pair_and_the_ca_subjects_come_without_cryptography() -> None:
    """berth run making its own serving pair (as kube-scheduler does) and reading a CA bundle's
    subjects (the request-header CA) leaves cryptography to a child process: it is never mapped."""
    out = run(
        """
        import json, ssl, sys
        from app.server.certs import ca_subjects, self_signed_files, server_context
        with self_signed_files(None, "berth", "127.0.0.1") as files:
            context = server_context(files)
            pem = open(files.cert_file, "rb").read()
        subjects = ca_subjects(pem)
        print(json.dumps({"context": isinstance(context, ssl.SSLContext), "subjects": len(subjects),
                          "cryptography": [m for m in sys.modules if m.startswith("cryptography")]}))
        """
    )
    assert out == {"context": True, "subjects": 2, "cryptography": []}


def test_the_explanations_load_on_first_use() -> None:
    """The simulator's names still import from the package, on demand; a name it lacks is an
    AttributeError, as for any module."""
    out = run(
        """
        import json, sys
        import app.simulate
        before = "app.simulate.state" in sys.modules
        from app.simulate import StateError, load_state
        try:
            app.simulate.no_such_name
            missing = "no error"
        except AttributeError as err:
            missing = str(err)
        print(json.dumps({"before": before, "after": "app.simulate.state" in sys.modules,
                          "same": load_state.__module__, "error": StateError.__name__, "missing": missing}))
        """
    )
    assert out == {
        "before": False,
        "after": True,
        "same": "app.simulate.state",
        "error": "StateError",
        "missing": "module 'app.simulate' has no attribute 'no_such_name'",
    }


def test_uvicorn_whole_is_still_there_when_asked_for() -> None:
    """Code that wants uvicorn's command line (``uvicorn.run``) gets the real package, with the same
    ``Config`` class berth's server uses."""
    out = run(
        """
        import json, sys
        from app.server import uvicorn_parts
        import uvicorn
        before = "click" in sys.modules
        runner = uvicorn.run
        print(json.dumps({"before": before, "run": runner.__module__, "click": "click" in sys.modules,
                          "config": uvicorn.Config is uvicorn_parts.Config}))
        """
    )
    assert out == {"before": False, "run": "uvicorn.main", "click": True, "config": True}
