"""The handler chain in front of the app: order, Cache-Control, 401/403, review caching, panics, logging."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from server.chainkit import (
    SUBJECT_HEADER,
    FakeKube,
    LogCapture,
    access_review,
    capture_logs,
    chain_client,
    token_review,
)

from app.server.authn import AUTHENTICATED_GROUP
from app.server.authz import SAR_PATH

TOKEN_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
RULES = {"rules": [{"users": ["alice"], "paths": ["/configz", "/whoami"], "verbs": ["get"]}]}


@pytest.fixture
def v3() -> Iterator[LogCapture]:
    yield from capture_logs(3)


def cert(subject: str) -> dict[str, str]:
    return {SUBJECT_HEADER: subject}


def test_every_answer_is_no_store_unless_the_route_sets_its_own() -> None:
    client = chain_client(rules=RULES)
    answers = [
        client.get("/healthz"),  # 200, always allowed
        client.get("/metrics"),  # 401
        client.get("/configz", headers=cert("CN=bob")),  # 403
        client.get("/nope", headers=cert("CN=x;O=system:masters")),  # 404 from the app
    ]
    assert [r.status_code for r in answers] == [200, 401, 403, 404]
    assert all(r.headers["cache-control"] == "no-store" for r in answers)
    own = client.get("/cached", headers=cert("CN=x;O=system:masters"))
    assert own.headers["cache-control"] == "max-age=60"


def test_no_credentials_is_401_except_on_the_always_allowed_paths() -> None:
    client = chain_client()
    for path in ("/metrics", "/configz", "/version", "/docs", "/whoami"):
        r = client.get(path)
        assert r.status_code == 401, path
        assert r.json() == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }
    for path in ("/healthz", "/readyz", "/livez"):
        assert client.get(path).status_code == 200, path
    # The defaults are full paths, as kube's: one check of /readyz needs /readyz* in the list.
    assert client.get("/readyz/shutdown").status_code == 401


def test_a_client_certificate_is_its_cn_with_its_organizations_as_groups() -> None:
    client = chain_client(rules={"rules": [{"groups": ["team-a"], "paths": ["/whoami"], "verbs": ["*"]}]})
    r = client.post("/whoami", headers=cert("CN=alice;O=team-a;O=team-b"))
    assert r.status_code == 200
    assert r.json()["user"] == "alice"
    assert r.json()["groups"] == ["team-a", "team-b", AUTHENTICATED_GROUP]
    nameless = client.get("/whoami", headers=cert("O=team-a"))
    assert nameless.status_code == 401


def test_forbidden_names_the_user_the_verb_and_the_path() -> None:
    client = chain_client(rules=RULES)
    assert client.get("/configz", headers=cert("CN=alice")).status_code == 200
    denied = client.post("/whoami", headers=cert("CN=alice"))  # alice may only get
    assert denied.status_code == 403
    assert denied.json()["reason"] == "Forbidden"
    assert denied.json()["message"] == 'forbidden: User "alice" cannot post path "/whoami"'
    assert client.get("/configz", headers=cert("CN=bob")).status_code == 403
    # system:masters may do anything, as in kube's delegating authorizer.
    assert client.get("/metrics", headers=cert("CN=root;O=system:masters")).status_code == 200


def test_anonymous_access_lets_authorization_decide() -> None:
    client = chain_client(anonymous=True, rules=RULES)
    r = client.get("/metrics")
    assert r.status_code == 403
    assert r.json()["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    assert client.get("/healthz").status_code == 200


def test_a_bearer_token_is_reviewed_once_then_cached_and_never_reaches_the_app() -> None:
    kube = FakeKube(
        {
            TOKEN_PATH: token_review({"good": ("system:serviceaccount:ns:sa", ["system:serviceaccounts"])}),
            SAR_PATH: access_review({("system:serviceaccount:ns:sa", "get", "/whoami")}),
        }
    )
    client = chain_client(kube=kube)
    for _ in range(3):
        r = client.get("/whoami", headers={"Authorization": "Bearer good"})
        assert r.status_code == 200
        assert r.json()["user"] == "system:serviceaccount:ns:sa"
        assert r.json()["authorization"] is None  # the credential stops at the chain
    assert kube.paths() == [TOKEN_PATH, SAR_PATH]
    assert kube.calls[1][1]["spec"]["groups"] == ["system:serviceaccounts", AUTHENTICATED_GROUP]
    for _ in range(2):
        assert client.get("/whoami", headers={"Authorization": "Bearer bad"}).status_code == 401
    assert kube.paths().count(TOKEN_PATH) == 2  # the rejection is cached too


def test_a_denied_review_is_403_with_its_reason_and_cached() -> None:
    kube = FakeKube({TOKEN_PATH: token_review({"t": ("sa", [])}), SAR_PATH: access_review(set())})
    client = chain_client(kube=kube)
    for _ in range(2):
        r = client.post("/whoami", headers={"Authorization": "Bearer t"})
        assert r.status_code == 403
        assert r.json()["message"] == 'forbidden: User "sa" cannot post path "/whoami": no RBAC rule'
    assert kube.paths().count(SAR_PATH) == 1


def test_review_failures_are_not_cached(v3: LogCapture) -> None:
    down: dict[str, bool] = {"tokens": True, "sar": True}

    def tokens(body: dict[str, object]) -> tuple[int, dict[str, object]]:
        if down["tokens"]:
            return 503, {"kind": "Status", "message": "etcd is down", "reason": "ServiceUnavailable"}
        return token_review({"t": ("sa", [])})(body)  # type: ignore[arg-type]

    def sar(body: dict[str, object]) -> tuple[int, dict[str, object]]:
        if down["sar"]:
            return 500, {"kind": "Status", "message": "webhook broke"}
        return access_review({("sa", "get", "/whoami")})(body)  # type: ignore[arg-type]

    kube = FakeKube({TOKEN_PATH: tokens, SAR_PATH: sar})
    client = chain_client(kube=kube)
    auth = {"Authorization": "Bearer t"}
    assert client.get("/whoami", headers=auth).status_code == 401
    assert "etcd is down" in v3.messages("Unable to authenticate the request")[0]["err"]
    down["tokens"] = False
    failed = client.get("/whoami", headers=auth)
    assert failed.status_code == 500
    assert failed.json()["reason"] == "InternalError"
    assert "webhook broke" in failed.json()["message"]
    down["sar"] = False
    assert client.get("/whoami", headers=auth).status_code == 200


def test_authentication_comes_before_authorization() -> None:
    kube = FakeKube({TOKEN_PATH: token_review({}), SAR_PATH: access_review(set())})
    client = chain_client(kube=kube)
    assert client.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert SAR_PATH not in kube.paths()  # a refused credential never reaches authorization


def test_a_panic_in_a_route_is_500_with_the_logged_request_id_and_serving_goes_on(v3: LogCapture) -> None:
    client = chain_client(authenticate=False)
    r = client.get("/boom")
    assert r.status_code == 500
    assert r.headers["cache-control"] == "no-store"
    panics = v3.messages("Observed a panic")
    assert len(panics) == 1
    request_id = panics[0]["requestID"]
    assert r.json() == {"Error": f"internal server error (request ID {request_id})"}
    assert "RuntimeError: kaboom" in panics[0]["err"]
    assert "kaboom" in panics[0]["stacktrace"] and "Traceback" in panics[0]["stacktrace"]
    assert client.get("/healthz").status_code == 200
    http = v3.messages("HTTP")
    assert [(h["URI"], h["resp"]) for h in http] == [("/boom", 500)]  # the probe is logged at -v 5 only


def test_a_panic_inside_the_chain_is_recovered_outermost(v3: LogCapture) -> None:
    class Broken:
        def request(self, *args: object, **kwargs: object) -> tuple[int, bytes]:
            raise ZeroDivisionError("bug in the client")

    client = chain_client(kube=Broken())  # type: ignore[arg-type]
    r = client.get("/metrics", headers={"Authorization": "Bearer t"})
    assert r.status_code == 500
    assert r.headers["cache-control"] == "no-store"
    assert r.json()["reason"] == "InternalError"
    request_id = v3.messages("Observed a panic")[0]["requestID"]
    assert request_id in r.json()["message"]
    assert v3.messages("HTTP")[0]["resp"] == 500
    assert client.get("/healthz").status_code == 200


def test_http_logging_at_v3_names_method_path_status_latency_and_user(v3: LogCapture) -> None:
    client = chain_client(rules=RULES)
    client.get("/configz?x=1", headers={**cert("CN=alice"), "User-Agent": "tester/1"})
    client.get("/metrics")
    logged = v3.messages("HTTP")
    assert [(h["verb"], h["URI"], h["resp"], h["user"]) for h in logged] == [
        ("GET", "/configz?x=1", 200, "alice"),
        ("GET", "/metrics", 401, ""),  # logging sits outside authentication
    ]
    assert logged[0]["userAgent"] == "tester/1"
    assert logged[0]["latency"].endswith(("µs", "ms", "s"))
    assert len(logged[0]["requestID"]) == 16


def test_no_http_logging_below_v3() -> None:
    for capture in capture_logs(2):
        chain_client(authenticate=False).get("/version")
        assert capture.messages("HTTP") == []


def test_probes_are_logged_from_v5() -> None:
    for capture in capture_logs(5):
        chain_client(authenticate=False).get("/livez")
        assert [h["URI"] for h in capture.messages("HTTP")] == ["/livez"]
