"""schemathesis against the served OpenAPI document: what the document says is what the server does.

Every operation of ``berth serve`` (the probes, /metrics, /configz, /version and the four verbs)
gets bodies and parameters generated from the document, valid ones and invalid ones, over a real
socket, and every answer is checked by schemathesis's checks: no 5xx, every status code and content
type documented, answers matching their schemas, schema-valid requests accepted and schema-invalid
ones refused with a 4xx. The suite's own invariant is added: no traceback in the log.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest
import schemathesis
from fuzz.bookkeeping import COUNTS, Tracebacks
from fuzz.conftest import SIZE
from hypothesis import settings
from server.conftest import build_app
from server.test_direct import serving

from app.server.chain import HandlerChain

EXAMPLES = {"slice": 25, "long": 400}[SIZE]
"""Examples per operation and mode (a few requests each): fewer than the other properties, as each
of the thirteen operations is a property of its own."""


APP = HandlerChain(build_app(max_request_bytes=1 << 20))
DOCUMENT = APP.app.openapi()
schema = schemathesis.openapi.from_dict(DOCUMENT)
"""Loaded from the app object that the test serves (schemathesis's lazy loading from a fixture does
not work with this pytest); the test checks that the server serves this very document."""


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serving(APP) as port:
        url = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{url}/openapi.json", timeout=30) as served:
            assert json.load(served) == DOCUMENT
        yield url


@schema.parametrize()
@settings(max_examples=EXAMPLES)
def test_the_server_does_what_its_openapi_document_says(
    case: schemathesis.Case, base_url: str, tracebacks: Tracebacks
) -> None:
    response = case.call_and_validate(base_url=base_url)
    COUNTS["requests"] += 1
    COUNTS[f"{response.status_code // 100}xx"] += 1
    COUNTS["schemathesis requests"] += 1
    tracebacks.check()
