"""The fuzz suite's seed, size and bookkeeping.

``make test`` runs a bounded slice (``BERTH_FUZZ=slice``, the default: a few dozen examples per
property) with a fresh seed each run, printed in the header; ``make fuzz`` runs a long one
(``BERTH_FUZZ=long``). ``BERTH_FUZZ_SEED=N`` replays a run. Every request the suite sends is
counted, by answer class, and the counts are printed at the end of the session.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterator

import pytest
from fuzz.bookkeeping import COUNTS, Tracebacks
from hypothesis import HealthCheck, settings

from app import logs

SEED_ENV = "BERTH_FUZZ_SEED"
SIZE_ENV = "BERTH_FUZZ"
SEED = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(2**32))
SIZE = os.environ.get(SIZE_ENV, "slice")

for profile, examples in (("slice", 40), ("long", 3000)):
    settings.register_profile(
        profile,
        max_examples=examples,
        deadline=None,  # a request's time depends on the shared machine's load, not on the input
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
settings.load_profile(SIZE)


def pytest_configure(config: pytest.Config) -> None:
    """Give hypothesis this run's seed (unless --hypothesis-seed was given)."""
    if config.getoption("hypothesis_seed", None) is None:
        config.option.hypothesis_seed = SEED


def pytest_report_header(config: pytest.Config) -> str:
    """The seed, and how to replay it."""
    seed = config.getoption("hypothesis_seed", None)
    return f"fuzz: {SIZE} run, seed {seed} (replay: {SEED_ENV}={seed})"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The counts of the run."""
    if COUNTS:
        seed = terminalreporter.config.getoption("hypothesis_seed", None)
        counts = ", ".join(f"{name} {COUNTS[name]}" for name in sorted(COUNTS))
        terminalreporter.write_line(f"fuzz ({SIZE}, seed {seed}): {counts}")


@pytest.fixture(scope="module")
def tracebacks() -> Iterator[Tracebacks]:
    """Every traceback logged while the module's tests run (berth's and uvicorn's loggers)."""
    handler = Tracebacks()
    loggers = [logging.getLogger(), logging.getLogger("uvicorn.error"), logs.logger()]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
