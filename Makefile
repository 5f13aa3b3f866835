# Workbench: `make run` opens the app, `make test` runs the suite. Both set everything up first.
VENV   ?= .venv
PY     := $(VENV)/bin/python
WB     := $(PY) -m workbench

.PHONY: setup run test bench demo clean

setup:
	@bash scripts/bootstrap.sh

run: setup
	$(WB)

test: setup
	$(PY) -m pytest

# Benchmarks print tables of measured ratios against peers and baselines; never part of `make test`.
bench: setup
	$(WB) bench

demo: setup
	$(WB) demo --out demo-output

clean:
	rm -rf $(VENV) demo-output build *.egg-info
