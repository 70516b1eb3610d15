# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench bench-peers docs tables install clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever pyproject.toml changes.
$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	# torch: the live-module readers are tested; ==2.13.0 is the CPU build this machine kind
	# keeps on disk (a range would fetch a CUDA build of several GB)
	$(PY) -m pip install --quiet -e '.[test,torch]' torch==2.13.0
	$(PY) -c "import neuromanifold.relu; neuromanifold.relu.warm_up()"  # numba's kernel cache
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/neuromanifold demo
	$(VENV)/bin/neuromanifold reproduce all --report out/report
	@echo "report: out/report/index.html"

# One BLAS thread per test worker: two workers on two cores, each with a multi-threaded
# OpenBLAS, oversubscribe the cores and small factorizations get 10-200x slower.
# Work stealing: xdist's default hands out chunks up front, and near the end one worker
# was left with a run of slow tests while the other idled (tests on a fresh clone, this
# machine: 537 s before, 268-305 s after; the suite grew by a few tests in between).
test: $(STAMP) lint
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -n 2 --dist worksteal

# Mechanical style, configured in pyproject.toml: ruff's lint rules and its formatter
# (`$(VENV)/bin/ruff format .` rewrites what the check refuses).
LINTED := src tests benchmarks docs/_ext examples
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# The same, with the peer libraries the baselines compare against installed: relucent
# (AGPL-3.0, pulls gurobipy with its size-limited licence), rebasin (Git Re-Basin's
# weight matching; pulls torch, several GB) and auto_LiRPA live in their own environment,
# never in the project's.
# auto_LiRPA (alpha-CROWN, the bound engine of alpha-beta-CROWN): its release on the package
# index (0.3, 2022) predates current torch, so its public repository's May 2026 release
# (0.7.1) is installed with --no-deps (it pins torch<2.9 and pytest==8.1.1, and bounds these
# networks unchanged on the CPU torch below); AUTO_LIRPA=PATH installs a local checkout.
PEERS := .venv-peers
AUTO_LIRPA ?= git+https://github.com/Verified-Intelligence/auto_LiRPA.git@a050a3d61f4cb68b108fa7f07dcb3e4d7ef304df
bench-peers:
	$(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install --quiet -e '.[test]' relucent rebasin torch==2.13.0 \
		appdirs graphviz packaging pyyaml
	$(PEERS)/bin/python -m pip install --quiet --no-deps "$(AUTO_LIRPA)"
	$(PEERS)/bin/python benchmarks/run_all.py

# The documentation site in site/ (open site/index.html); `$(VENV)/bin/mkdocs serve` serves
# it with live reload. The --help blocks of docs/cli/ are regenerated first.
docs: $(STAMP)
	$(PY) docs/_ext/cli_help.py
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .hypothesis

# The reproduction tables of README.md and docs/reproduction.md: a full
# `reproduce all --seed 0` (a few minutes) into docs/reproduction_last_run.json, then the
# marked blocks rewritten from it.
tables: $(STAMP)
	$(PY) docs/_ext/reproduction_tables.py --run
