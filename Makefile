# berth's two commands: `make run` and `make test` (plus `make demo`). Each installs what it needs first,
# at the versions locked in uv.lock, and links `berth` into $(BINDIR) so that a bare `berth` works.
UV ?= $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
VENV_PY := .venv/bin/python
HOST ?= 127.0.0.1
PORT ?= 8888
BINDIR ?= $(HOME)/.local/bin

.PHONY: install install-run link run demo test lint typecheck unit bench clean control-plane parity-oracle parity fuzz browser

# Everything, the test tools included (what `make test` and development need).
install: .venv/.installed-dev link

# Only what running berth needs (no pytest, ruff, mypy); tools already installed are left alone.
install-run: .venv/.installed-run

.venv/.installed-dev: pyproject.toml uv.lock
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) sync --frozen
	@touch $@ .venv/.installed-run

.venv/.installed-run: pyproject.toml uv.lock
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	$(UV) sync --frozen --no-dev --inexact
	@touch $@

# `berth` on PATH: a symlink to this checkout's .venv/bin/berth (BINDIR=... to put it elsewhere).
link: install-run
	@mkdir -p $(BINDIR) && ln -sfn $(CURDIR)/.venv/bin/berth $(BINDIR)/berth
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; *) echo "note: $(BINDIR) is not on your PATH; add it to run \`berth\`";; esac

run: install-run link
	.venv/bin/berth serve --address $(HOST) --port $(PORT) $(ARGS)

# A local cluster with three kubelet-less Nodes, `berth run` scheduling two pods on it, the explanation,
# and everything torn down again (hack/demo.py).
demo: install-run control-plane
	$(VENV_PY) hack/demo.py

lint: install
	.venv/bin/ruff check app tests bench examples hack
	.venv/bin/ruff format --check app tests bench examples hack

typecheck: install
	.venv/bin/mypy
	MYPYPATH=bench:tests .venv/bin/mypy --explicit-package-bases bench/*.py

# etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kubectl v1.36.3, built from the Go module proxy into
# ~/.cache/berth (a no-op once built); the tests under tests/kube run against them.
control-plane:
	hack/control-plane.sh build

# kube-scheduler v1.36.3's framework as a program: the oracle of tests/parity (docs/parity.md).
parity-oracle: control-plane
	hack/parity-oracle.sh build >/dev/null

# Debian's chromium for the web UI's browser tests (tests/ui; a no-op once installed). A failure here
# does not stop the suite: the UI tests then fail, saying chromium is missing.
browser:
	-hack/browser.sh

unit: install control-plane parity-oracle browser
	.venv/bin/pytest

# The deep parity pass: N random scenarios through berth and the oracle (SEED=... replays a run;
# STORAGE=1 gives every scenario storage objects, the default share being gen_storage.STORAGE_SHARE).
N ?= 5000
parity: install parity-oracle
	PYTHONPATH=tests .venv/bin/python -m parity.run -n $(N) $(if $(SEED),--seed $(SEED)) $(if $(STORAGE),--storage-share $(STORAGE))

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
