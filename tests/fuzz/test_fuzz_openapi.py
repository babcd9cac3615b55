"""schemathesis against the served OpenAPI document: what the document says is what the server does.

Every operation of ``berth serve`` (the probes, /metrics, /configz, /version and the four verbs)
gets bodies and parameters generated from the document, valid ones and invalid ones, over a real
socket, and every answer is checked by schemathesis's checks: no 5xx, every status code and content
type documented, answers matching their schemas, schema-valid requests accepted and schema-invalid
ones refused with a 4xx. The suite's own invariant is added: no traceback in the log.

One exception, which the document states: it types the metadata of core/v1 objects, not their
``spec`` and ``status`` (all of core/v1 would be most of the document), so a request valid by the
document may still be refused there; the refusal must then be a 400 naming that field's path.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator

import pytest
import schemathesis
from fuzz.bookkeeping import COUNTS, Tracebacks
from fuzz.conftest import SIZE
from hypothesis import settings
from schemathesis.checks import positive_data_acceptance
from schemathesis.generation import GenerationMode
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


CORE_V1_BODY = re.compile(
    r"(Pod|Nodes\.items\[\d+\]|NodeNameTo(Meta)?Victims\[.*\]\.Pods\[\d+\])\.(spec|status)\.", re.S
)
"""Where a pod or node's spec or status is named in an ``Error``: fields the document does not type."""


@schema.parametrize()
@settings(max_examples=EXAMPLES)
def test_the_server_does_what_its_openapi_document_says(
    case: schemathesis.Case, base_url: str, tracebacks: Tracebacks
) -> None:
    response = case.call_and_validate(base_url=base_url, excluded_checks=[positive_data_acceptance])
    positive = case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE
    # Valid by the document: accepted, or refused for a core/v1 field the document leaves untyped.
    if positive and response.status_code in (400, 413, 415, 422):
        error = response.json().get("Error", "") if response.status_code == 400 else ""
        assert CORE_V1_BODY.match(error), (response.status_code, response.text[:300])
    COUNTS["requests"] += 1
    COUNTS[f"{response.status_code // 100}xx"] += 1
    COUNTS["schemathesis requests"] += 1
    tracebacks.check()
