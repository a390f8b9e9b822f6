#!/usr/bin/env bash
# Stops the dockerd that docker/setup-engine.sh started (its pid file), and
# nothing else: an engine that was already running stays up.
set -euo pipefail
cd "$(dirname "$0")/.."
PIDFILE=${SLOTWISE_DOCKERD_PIDFILE:-${SLOTWISE_DOCKER_STATE:-run/docker}/dockerd.pid}
[ -f "$PIDFILE" ] || exit 0
pid=$(cat "$PIDFILE")
if [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = dockerd ]; then
  echo "docker setup: stopping the dockerd it started (pid $pid)" >&2
  kill -TERM "$pid"
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
fi
rm -f "$PIDFILE"
