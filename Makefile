# Slotwise: `make demo` installs everything and runs the demo (a real YARN
# cluster scheduled by Python); `make test` installs everything and runs every
# test (Python, the shim's JUnit tests, and the real-cluster tests).
# Needs Python 3.11, a JDK 17 and Maven; everything else comes from PyPI and
# Maven Central.

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
	mvn -q -B package
	$(PY) -m pytest -q

demo: setup
	$(VENV)/bin/slotwise validate conf/allocations.xml conf/hadoop-doc-example.xml conf/mrv1-pools.xml
	$(VENV)/bin/slotwise demo

bench: setup
	$(PY) benchmarks/bench_engine.py
	$(PY) benchmarks/bench_roundtrip.py
	$(PY) benchmarks/bench_sim.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
