#!/usr/bin/env bash
# The docker tier as `make docker-test` (so `make test` and CI) runs it:
# make a Docker engine answer (installing docker.io, debootstrap, iptables
# and Compose v2 as root; starting dockerd if none runs), build or reuse the
# images, run tests/docker (testcontainers, Ryuk disabled, the compose
# project taken down by the tests and again here), stop the dockerd it
# started, and print the tier's time. Where no engine can run at all (not
# root and none running) the tests skip, saying why; under
# SLOTWISE_REQUIRE_DOCKER=1 (.ci/run) the tier fails instead, in one line.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
export TESTCONTAINERS_RYUK_DISABLED=true
started=$(date +%s)
finish() {
  docker compose -p slotwise-test -f docker/compose.yaml down --volumes --remove-orphans >/dev/null 2>&1 || true
  docker compose -p slotwise-mrv1-test -f docker/compose-mrv1.yaml down --volumes --remove-orphans >/dev/null 2>&1 || true
  bash docker/stop-engine.sh
}

bash docker/setup-engine.sh
rc=$?
if [ $rc = 3 ] && [ "${SLOTWISE_REQUIRE_DOCKER:-}" = 1 ]; then
  echo "docker tier: FAILED: no Docker engine can run here (above), and SLOTWISE_REQUIRE_DOCKER=1 requires it"
  exit 1
elif [ $rc = 3 ]; then
  echo "docker tier: no Docker engine can run here (above); its tests skip"
  "$PY" -m pytest -q -rs -m docker tests/docker
  exit $?
elif [ $rc != 0 ]; then
  echo "docker tier: FAILED to set up the Docker engine (exit $rc)"
  exit $rc
fi
trap finish EXIT
bash docker/build-images.sh || { echo "docker tier: FAILED to build the images"; exit 1; }
SLOTWISE_REQUIRE_DOCKER=1 "$PY" -m pytest -q --durations=10 -m docker tests/docker
rc=$?
echo "docker tier: $([ $rc = 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - started )) s" \
     "(engine, images and tests; the compose logs are in run/docker/*-test-compose.log)"
exit $rc
