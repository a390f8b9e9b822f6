# Slotwise: `make demo` installs everything and runs the demo (a real YARN
# cluster scheduled by Python); `make test` installs everything and runs every
# test (Python, the shim's JUnit tests, and the real-cluster tests).
# Needs Python 3.11, a JDK 17 and Maven; everything else comes from PyPI and
# Maven Central.

# Python caches compiled modules (__pycache__, ignored by git) even where the
# environment says not to: the tests start Python processes by the hundred,
# and each would compile the package again.
unexport PYTHONDONTWRITEBYTECODE

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: setup browser test demo bench clean docker-demo docker-test

setup: $(STAMP)

# uv (from PyPI) installs in a minute what pip takes twenty for on a small
# machine; pip is the fallback where uv has no wheel.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet uv
	$(VENV)/bin/uv pip install --quiet --python $(PY) -e '.[test]' || $(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The UI tests drive Debian's chromium with Playwright (no browser download).
# apt's and dpkg's output goes to a log (hundreds of lines); one line says
# what happened, and the log's end is shown if the install fails. Where it
# cannot be installed (not root, no apt-get) the UI tests skip, or, under
# SLOTWISE_REQUIRE_BROWSER=1 (.ci/run), this fails saying why.
BROWSER_LOG = run/browser-apt.log
browser:
	@command -v chromium >/dev/null 2>&1 || { [ -n "$$SLOTWISE_CHROMIUM" ] && [ -x "$$SLOTWISE_CHROMIUM" ]; } || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    mkdir -p $(dir $(BROWSER_LOG)); \
	    echo "installing Debian's chromium for the UI tests (up to 250 MB from Debian's mirrors; log: $(BROWSER_LOG)) ..."; \
	    if { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >$(BROWSER_LOG) 2>&1; then \
	      echo "installed $$(chromium --version 2>/dev/null || echo chromium)"; \
	    else echo "installing chromium failed; the end of $(BROWSER_LOG):" >&2; tail -n 25 $(BROWSER_LOG) >&2; exit 1; fi; \
	  elif [ "$$SLOTWISE_REQUIRE_BROWSER" = 1 ]; then \
	    echo "chromium missing, and SLOTWISE_REQUIRE_BROWSER=1 requires the UI tests: install Debian's chromium package (as root: make browser)" >&2; exit 1; \
	  else echo "chromium missing: install Debian's chromium package (UI tests will be skipped)"; fi; }

# Runs a tier and prints its time, passed or not (CI must stay under an hour).
tier = s=$$(date +%s); rc=0; $(2) || rc=$$?; \
  echo "tier $(1): $$([ $$rc = 0 ] && echo passed || echo FAILED) in $$(( $$(date +%s) - s )) s"; exit $$rc

test: setup browser
	@$(call tier,java (JUnit),mvn -q -B package)
	@$(call tier,python (unit; a worker per core),$(PY) -m pytest -q -n auto --durations=15 -m "not docker and not cluster")
	@$(call tier,real clusters,$(PY) -m pytest -q --durations=15 -m cluster)
	@$(call tier,docker,$(MAKE) --no-print-directory docker-test)

# The dockerized cluster (docker/, docs/docker.md). Both install what is
# missing as root (docker.io, debootstrap, iptables, Compose v2), start
# dockerd if none answers, and build or reuse the images.
docker-test: setup
	bash docker/test-tier.sh

docker-demo: setup
	bash docker/setup-engine.sh
	bash docker/build-images.sh
	$(PY) docker/demo.py $(if $(MRV1),--mrv1)$(if $(HA),--ha)

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
