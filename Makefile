# Workbench: `make run` opens the app, `make test` runs the suite. Both set everything up first.
VENV   ?= .venv
PY     := $(VENV)/bin/python
WB     := $(PY) -m workbench

.PHONY: setup run lint test bench benchmarks-page screenshots demo clean

setup:
	@bash scripts/bootstrap.sh

run: setup
	$(WB)

# Lint and format check first (seconds), then the suite.
lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# Two pytest workers side by side (pytest-xdist), one torch thread each; the tests that start
# worker processes of their own run one after another (tests/conftest.py: PROCESSES).
TEST_WORKERS ?= 2

test: setup lint
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup

# Benchmarks print tables of measured ratios against peers and baselines; never part of `make test`.
# Each runs its peers and baselines in the same run (about 1 h 15 min in all on 2 cores) and writes
# a record (--record) to bench-results/; docs/benchmarks.md is rendered from the records.
BENCH_DIR := bench-results

bench: setup
	mkdir -p $(BENCH_DIR)
	$(WB) bench --record $(BENCH_DIR)/shell.json
	$(WB) attention bench --record $(BENCH_DIR)/attention.json
	$(WB) sketcher bench --targets 100 --primitives 1-4 --budget 2000 --sketch 100 --record $(BENCH_DIR)/sketcher-1-4.json
	$(WB) sketcher bench --targets 15 --primitives 5-8 --budget 2000 --record $(BENCH_DIR)/sketcher-5-8.json
	$(WB) planner suite --n 104 --seed 0 --record $(BENCH_DIR)/planner-suite.json
	$(WB) planner replay-fps --record $(BENCH_DIR)/planner-replay-fps.json
	$(WB) segmentation scenes --n 20 --seed 1000 --out bench-data/segmentation
	$(WB) segmentation scenes --generator eval --n 20 --seed 9000 --out bench-data/segmentation-eval
	$(WB) segmentation bench --scenes bench-data/segmentation --eval-scenes bench-data/segmentation-eval --record $(BENCH_DIR)/segmentation.json
	$(WB) topomap bench --seeds 3 --record $(BENCH_DIR)/topomap.json
	$(MAKE) benchmarks-page

# docs/benchmarks.md from the records alone (seconds; no benchmark runs).
benchmarks-page: setup
	$(PY) scripts/render_benchmarks.py

# The README's and docs' pictures: the window, and each panel after its example ran (a few minutes).
screenshots: setup
	$(WB) screenshot --out docs/images/window.png
	for panel in segmentation planner attention sketcher topomap; do \
		$(WB) screenshot --panel $$panel --run --out docs/images/$$panel.png || exit 1; \
	done

demo: setup
	$(WB) demo --out demo-output

clean:
	rm -rf $(VENV) demo-output bench-data build *.egg-info
