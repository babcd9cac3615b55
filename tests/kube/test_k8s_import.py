"""``app.kube.k8s``: berth imports the kubernetes client's configuration parts, not its generated code.

Each case runs in a fresh interpreter: this test process has long imported ``kubernetes`` whole.
"""

from __future__ import annotations

from pathlib import Path

from tests.fresh_interpreter import run_python as run

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: s3cret}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
"""


def test_berth_loads_a_kubeconfig_without_the_generated_models(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIG)
    out = run(
        f"""
        import sys
        from app.kube.client import KubeClient
        kc = KubeClient.from_config({str(config)!r})
        headers = kc.headers(None)
        print(kc.host, headers["authorization"], any(m.startswith("kubernetes.client.models.") for m in sys.modules))
        """
    )
    assert out == "https://127.0.0.1:6443 Bearer s3cret False"


def test_oidc_refresh_loads_its_oauth_packages_when_it_needs_them(tmp_path: Path) -> None:
    """kubernetes.config imports requests_oauthlib and oauthlib for OIDC token refresh alone: loading
    a kubeconfig leaves them out, and the refresh gets the real session class and error on first use."""
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIG)
    out = run(
        f"""
        import sys
        from app.kube.client import KubeClient
        KubeClient.from_config({str(config)!r})
        from kubernetes.config import kube_config
        before = [m for m in ("requests_oauthlib.oauth2_session", "oauthlib.oauth2.rfc6749") if m in sys.modules]
        session = kube_config.OAuth2Session(client_id="berth", token={{"refresh_token": "r"}})
        from requests_oauthlib import OAuth2Session
        error = kube_config.oauthlib.oauth2.rfc6749.errors.InvalidClientIdError
        print(before, type(session) is OAuth2Session, session.client_id, error.__module__, error.__name__)
        """
    )
    assert out == "[] True berth oauthlib.oauth2.rfc6749.errors InvalidClientIdError"


def test_the_api_clients_date_parser_and_thread_pool_load_on_first_use(tmp_path: Path) -> None:
    """ApiClient imports dateutil's parser (for the generated models) and a thread pool (for
    async_req) that berth never uses: they load, whole, when something calls them."""
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIG)
    out = run(
        f"""
        import sys
        from app.kube.client import KubeClient
        KubeClient.from_config({str(config)!r})
        from kubernetes.client import api_client
        before = [m for m in ("dateutil.parser._parser", "multiprocessing.connection") if m in sys.modules]
        when = api_client.parse("2024-05-06T07:08:09Z")
        pool = api_client.ThreadPool(2)
        squares = pool.map(lambda x: x * x, [1, 2, 3])
        pool.close()
        from multiprocessing.pool import ThreadPool
        print(before, when.isoformat(), squares, type(pool) is ThreadPool, ThreadPool.__module__)
        """
    )
    assert out == "[] 2024-05-06T07:08:09+00:00 [1, 4, 9] True multiprocessing.pool"


def test_requests_guesses_an_encoding_with_charset_normalizer_loaded_on_first_use(tmp_path: Path) -> None:
    """requests imports charset_normalizer (about 3 MiB with its compiled modules) to guess an
    undeclared response encoding, which berth never asks for: loading a kubeconfig reads only its
    version (requests checks it), and the guess loads the real package and answers as it would."""
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIG)
    code = """
        import sys
        from requests.models import Response
        from charset_normalizer import __version__
        answer = Response()
        answer._content = "Grüße aus dem Süden, très bien".encode("latin-1")
        print(__version__ > "", answer.apparent_encoding, "charset_normalizer.md" in sys.modules)
        """
    light = run(
        f"""
        import sys
        from app.kube.client import KubeClient
        KubeClient.from_config({str(config)!r})
        print("charset_normalizer.md" in sys.modules)
        """
        + code
    )
    whole = run(code)
    assert light.splitlines()[0] == "False"
    assert light.splitlines()[1] == whole and whole.endswith(" True")


def test_the_rest_of_the_package_is_still_there_when_asked_for() -> None:
    out = run(
        """
        import app.kube.client
        import kubernetes
        from kubernetes import client
        print(client.CoreV1Api.__name__, client.models.V1Pod.__name__, kubernetes.__version__ > "")
        from kubernetes.client import V1Node
        print(V1Node.__name__, kubernetes.watch.Watch.__name__)
        """
    )
    assert out.splitlines() == ["CoreV1Api V1Pod True", "V1Node Watch"]


def test_a_kubernetes_imported_before_is_used_as_it_is() -> None:
    out = run(
        """
        import kubernetes.client
        from app.kube import k8s
        print(k8s.ApiClient is kubernetes.client.ApiClient, k8s.Configuration is kubernetes.client.Configuration)
        """
    )
    assert out == "True True"
