# Slotwise: `make demo` installs everything and runs the demo (a real YARN
# cluster scheduled by Python); `make test` installs everything and runs every
# test (Python, the shim's JUnit tests, and the real-cluster tests).
# Needs Python 3.11, a JDK 17 and Maven; everything else comes from PyPI and
# Maven Central.

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: setup browser test demo bench clean docker-demo docker-test

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The UI tests drive Debian's chromium with Playwright (no browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "chromium missing: install Debian's chromium package (UI tests will be skipped)"; fi; }

test: setup browser
	mvn -q -B package
	$(PY) -m pytest -q -m "not docker"
	$(MAKE) --no-print-directory docker-test

# The dockerized cluster (docker/, docs/docker.md). Both install what is
# missing as root (docker.io, debootstrap, iptables, Compose v2), start
# dockerd if none answers, and build or reuse the images.
docker-test: setup
	bash docker/test-tier.sh

docker-demo: setup
	bash docker/setup-engine.sh
	bash docker/build-images.sh
	$(PY) docker/demo.py

demo: setup
	$(VENV)/bin/slotwise validate conf/allocations.xml conf/hadoop-doc-example.xml conf/mrv1-pools.xml
	$(VENV)/bin/slotwise demo

bench: setup
	$(PY) benchmarks/bench_engine.py
	$(PY) benchmarks/bench_roundtrip.py
	$(PY) benchmarks/bench_sim.py
	$(PY) benchmarks/bench_reload.py
	$(PY) benchmarks/bench_mrv1.py
	$(PY) benchmarks/bench_sls.py --quick

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
