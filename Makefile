# Slotwise: `make demo` installs everything and runs the demo;
# `make test` installs everything and runs every test.

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: setup test demo bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

test: setup
	$(PY) -m pytest -q

demo: setup
	@echo "== slotwise validate conf/*.xml"
	$(VENV)/bin/slotwise validate conf/allocations.xml conf/hadoop-doc-example.xml conf/mrv1-pools.xml
	@echo
	@echo "== What-if: 64 GB / 64 vcores, prod and research both want 48 GB, adhoc 8 GB"
	$(VENV)/bin/slotwise shares --allocations conf/allocations.xml --capacity "65536 mb, 64 vcores" \
		--demand "prod=49152 mb, 48 vcores" --demand "research=49152 mb, 48 vcores" \
		--demand "adhoc=8192 mb, 8 vcores"
	@echo
	@echo "== What-if (MRv1 file): 100 map slots, production and research want 80 each"
	$(VENV)/bin/slotwise shares --allocations conf/mrv1-pools.xml --capacity 100 \
		--demand production=80 --demand research=80

bench: setup
	$(PY) benchmarks/bench_engine.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
