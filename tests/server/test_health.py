"""/healthz, /livez, /readyz as Kubernetes components answer them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from starlette.testclient import TestClient


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
def test_ok(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert (r.status_code, r.text) == (200, "ok")
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    assert r.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/healthz?verbose", "[+]ping ok\nhealthz check passed\n"),
        ("/livez?verbose", "[+]ping ok\nlivez check passed\n"),
        ("/readyz?verbose", "[+]ping ok\n[+]shutdown ok\nreadyz check passed\n"),
        ("/readyz?verbose=1", "[+]ping ok\n[+]shutdown ok\nreadyz check passed\n"),
    ],
)
def test_verbose(client: TestClient, path: str, text: str) -> None:
    r = client.get(path)
    assert (r.status_code, r.text) == (200, text)


def test_individual_checks(client: TestClient) -> None:
    assert client.get("/livez/ping").text == "ok"
    assert client.get("/readyz/shutdown").text == "ok"
    assert client.get("/readyz/nope").status_code == 404


def test_failing_check(make_client: Callable[..., TestClient]) -> None:
    client = make_client(readyz_checks={"informer-sync": lambda: "2 informers not synced"})
    r = client.get("/readyz")
    assert r.status_code == 500
    assert (
        r.text
        == "[+]ping ok\n[+]shutdown ok\n[-]informer-sync failed: reason withheld\nreadyz check failed\n"
    )
    assert client.get("/readyz?verbose").status_code == 500
    one = client.get("/readyz/informer-sync")
    assert (one.status_code, one.text) == (500, "internal server error: 2 informers not synced\n")
    # /livez does not depend on readiness.
    assert client.get("/livez").status_code == 200


def test_a_raising_check_fails_without_crashing(make_client: Callable[..., TestClient]) -> None:
    def broken() -> str | None:
        raise RuntimeError("bug")

    client = make_client(readyz_checks={"broken": broken})
    r = client.get("/readyz/broken")
    assert (r.status_code, r.text) == (500, "internal server error: check raised RuntimeError: bug\n")


def test_exclude(make_client: Callable[..., TestClient]) -> None:
    client = make_client(readyz_checks={"informer-sync": lambda: "not yet"})
    r = client.get("/readyz?verbose&exclude=informer-sync&exclude=bogus")
    assert r.status_code == 200
    assert r.text == (
        "[+]ping ok\n[+]shutdown ok\n[+]informer-sync excluded: ok\n"
        'warn: some health checks cannot be excluded: no matches for "bogus"\nreadyz check passed\n'
    )


def test_shutdown_flips_readiness(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    with client:
        assert client.get("/readyz").status_code == 200
        client.app.state.shutdown.shutting_down = True  # type: ignore[attr-defined]
        r = client.get("/readyz")
        assert r.status_code == 500
        assert "[-]shutdown failed: reason withheld" in r.text
        assert client.get("/livez").status_code == 200


def test_lifespan_end_marks_shutdown(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    with client:
        pass
    assert client.app.state.shutdown() == "process is shutting down"  # type: ignore[attr-defined]
