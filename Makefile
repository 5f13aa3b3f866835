# Workbench: `make run` opens the app, `make test` runs the suite. Both set everything up first.
VENV   ?= .venv
PY     := $(VENV)/bin/python
WB     := $(PY) -m workbench

.PHONY: setup run lint test bench demo clean

setup:
	@bash scripts/bootstrap.sh

run: setup
	$(WB)

# Lint and format check first (seconds), then the suite.
lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test: setup lint
	$(PY) -m pytest

# Benchmarks print tables of measured ratios against peers and baselines; never part of `make test`.
# Each runs its peers and baselines in the same run (about 1 h 15 min in all on 2 cores).
bench: setup
	$(WB) bench
	$(WB) attention bench
	$(WB) sketcher bench --targets 100 --primitives 1-4 --budget 2000 --sketch 100
	$(WB) sketcher bench --targets 15 --primitives 5-8 --budget 2000
	$(WB) planner suite --n 104 --seed 0
	$(WB) planner replay-fps
	$(WB) segmentation scenes --n 20 --seed 1000 --out bench-data/segmentation
	$(WB) segmentation bench --scenes bench-data/segmentation
	$(WB) topomap bench --seeds 3

demo: setup
	$(WB) demo --out demo-output

clean:
	rm -rf $(VENV) demo-output bench-data build *.egg-info
