# berth's two commands: `make run` and `make test`. Both install first (locked with uv).
UV ?= $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
VENV_PY := .venv/bin/python
HOST ?= 127.0.0.1
PORT ?= 8888

.PHONY: install run test lint typecheck unit bench clean control-plane fuzz

install: .venv/.installed

.venv/.installed: pyproject.toml uv.lock
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) sync --frozen
	@touch $@

run: install
	.venv/bin/berth serve --address $(HOST) --port $(PORT) $(ARGS)

lint: install
	.venv/bin/ruff check app tests bench examples
	.venv/bin/ruff format --check app tests bench examples

typecheck: install
	.venv/bin/mypy
	MYPYPATH=bench:tests .venv/bin/mypy --explicit-package-bases bench/*.py

# etcd, kube-apiserver, kube-scheduler and kubectl v1.36.3, built from the Go module proxy into
# ~/.cache/berth (a no-op once built); the tests under tests/kube run against them.
control-plane:
	hack/control-plane.sh build

unit: install control-plane
	.venv/bin/pytest

test: lint typecheck unit

# The fuzz suite (tests/fuzz) at length: `make test` runs a bounded slice of it with a fresh seed;
# BERTH_FUZZ_SEED=N replays a run (the seed is printed at the end).
fuzz: install
	BERTH_FUZZ=long .venv/bin/pytest tests/fuzz -p no:cacheprovider

bench: install
	$(VENV_PY) bench/engine.py
	$(VENV_PY) bench/extender.py --gc freeze
	$(VENV_PY) bench/extender_http.py
	$(VENV_PY) bench/preemption.py

clean:
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache
