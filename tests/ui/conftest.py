"""Browser fixtures for the web UI tests: Debian's chromium driven by Playwright for Python.

hack/browser.sh (run by ``make unit`` before pytest) installs ``chromium``; Playwright drives that
binary (``executable_path``), never a browser of its own download. Without it the tests FAIL saying
so: a CI without a browser must not pass the UI untested.

Every page a test opens collects console errors and uncaught exceptions; the ``page`` fixture fails
the test if there were any. Screenshots go to ``build/screenshots/`` (git-ignored), where a developer
can look at them after a run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = REPO / "build" / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One chromium per test module. Playwright's sync API keeps an event loop running in the main
    thread while it is started, so it stops with the module: a test collected after the UI tests
    (``pytest tests/ui tests/extender``) can still call ``asyncio.run``. (A package scope did not
    end it before the next directory's tests: this directory has no ``__init__.py``.)"""
    if not CHROMIUM.exists():
        pytest.fail(
            f"chromium is not installed ({CHROMIUM} is missing): the web UI tests need a real browser. "
            "Run hack/browser.sh as root (make unit does), or apt-get install -y chromium chromium-driver.",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            yield chromium
        finally:
            chromium.close()


class PageErrors(list[str]):
    """Console errors and uncaught exceptions of one page."""


def open_page(browser: Any, viewport: dict[str, int] = DESKTOP, **context: Any) -> tuple[Any, PageErrors]:
    """A new page (in its own context) and the list its console errors land in."""
    ctx = browser.new_context(viewport=viewport, **context)
    page = ctx.new_page()
    errors = PageErrors()
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"exception: {e}"))
    return page, errors


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A 1280x800 page; the test fails if the page logged a console error or threw."""
    pg, errors = open_page(browser)
    yield pg
    pg.context.close()
    assert errors == [], errors


def screenshot(page: Any, name: str) -> Path:
    """Save the whole page as ``build/screenshots/<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
