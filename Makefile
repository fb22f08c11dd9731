# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
TIME_LIMIT ?= 20

.PHONY: demo test docs lint install clean bench bench-smoke bench-instances slurm-packages

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The tests and the docs need every extra (Ray included: its tests run for real); the demo only
# the package and its compiled window search.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,ray,fast,docs]'
	touch $(STAMP) $(DEMO_STAMP)

$(DEMO_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[fast]'
	touch $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/horizon-opt compare instances/demo.yaml --solvers fifo,backfill,greedy,cpsat \
		--time-limit $(TIME_LIMIT) --output-dir demo-output
	$(BIN)/horizon-opt explain instances/demo.yaml demo-output/greedy.json --job pretrain-code-3b
	$(BIN)/horizon-opt explain instances/demo.yaml demo-output/greedy.json -f csv -o demo-output/explain.csv
	$(BIN)/horizon-opt whatif instances/demo.yaml --prices
	$(BIN)/horizon-opt replan instances/demo-state.yaml --previous demo-output/greedy.json \
		--stability 0.05 --time-limit $(TIME_LIMIT) -o demo-output/replan.json
	$(BIN)/horizon-opt simulate instances/demo.yaml \
		--policy fifo,backfill,backfill-expect,cpsat,cpsat-oracle \
		--time-limit 2 -o demo-output/simulate
	$(BIN)/horizon-opt check demo-output/simulate/cpsat.actual.yaml demo-output/simulate/cpsat.ran.json
	$(BIN)/horizon-opt run instances/demo-run.yaml
	head -n 7 demo-output/run-state/current/actions.sh

# The real-Slurm tests (tests/e2e/test_real_slurm.py) need Debian's slurm-wlm and munge: installed
# here when running as root and missing (the package lists are fetched only if the install
# cannot find them). Elsewhere those tests skip and say why.
slurm-packages:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	   ! { command -v slurmctld && command -v slurmd && command -v munged; } >/dev/null; then \
	  echo "installing slurm-wlm and munge for the real-Slurm tests"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && \
	    apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null; }; \
	fi

test: $(STAMP) slurm-packages
	$(BIN)/python -m pytest
	$(BIN)/mkdocs build --strict -q -d site

# The guides in docs/ and the API reference from the docstrings (mkdocs.yml), into site/.
# --strict: a warning (a broken page link or anchor, a docstring that does not render) fails it.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict -d site

# Benchmarks (benchmarks/README.md): the full suite, a quick smoke run, the committed instance set.
# bench writes into bench-results/<suite>/ (not committed); --out benchmarks/results/... rewrites
# the committed results.
JOBS ?= 2
BENCH_FAMILIES := enterprise hetero deadline trace

bench: $(STAMP)
	$(BIN)/horizon-opt bench benchmarks/suite.yaml --jobs $(JOBS)

bench-smoke: $(STAMP)
	$(BIN)/horizon-opt bench benchmarks/smoke.yaml --jobs 1

bench-instances: $(STAMP)
	for f in $(BENCH_FAMILIES); do \
	  for s in 0 1 2; do for z in small medium; do \
	    $(BIN)/horizon-opt generate $$f --size $$z --seed $$s -o instances/bench/$$f-$$z-s$$s.yaml || exit 1; \
	  done; done; \
	  $(BIN)/horizon-opt generate $$f --size large --seed 0 -o instances/bench/$$f-large-s0.yaml || exit 1; \
	done

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	$(BIN)/mypy

clean:
	rm -rf $(VENV) demo-output bench-results site .pytest_cache .mypy_cache .ruff_cache
