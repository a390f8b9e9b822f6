#!/usr/bin/env bash
# Makes a Docker engine answer on this machine, for the docker tier and
# `make docker-demo`: installs what is missing (as root: Debian's docker.io,
# debootstrap, iptables, and the Compose v2 plugin), then starts dockerd if
# no engine answers. Idempotent; prints what it did.
#
# A dockerd this script started is recorded in $SLOTWISE_DOCKERD_PIDFILE
# (default run/docker/dockerd.pid); `docker/stop-engine.sh` stops that one
# and never an engine someone else runs.
#
# Exit 0: an engine answers and `docker compose` works. Exit 3: none can run
# here (not root and none running); the message says why. Other: a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=${SLOTWISE_DOCKER_STATE:-run/docker}
PIDFILE=${SLOTWISE_DOCKERD_PIDFILE:-$STATE/dockerd.pid}
PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
say() { echo "docker setup: $*" >&2; }
is_root() { [ "$(id -u)" = 0 ]; }

engine_answers() { command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; }

source docker/apt-mirror.sh

apt_updated=
apt_install() {
  is_root || { say "missing $*: install them as root (apt-get install $*)"; exit 3; }
  [ -n "$apt_updated" ] || { say "apt-get update"; apt-get update -qq; apt_updated=1; }
  say "installing $* (Debian packages)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# Compose v2: bookworm ships only v1, so take the docker-compose binary of
# Debian trixie's package (it runs on bookworm) from the same mirror, with a
# throwaway apt state: the system's sources and lists are left alone.
install_compose() {
  is_root || { say "no 'docker compose' (v2): install the Compose plugin (as root: $0)"; exit 3; }
  local tmp mirror
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  mirror=$(apt_mirror)
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
  echo "deb $mirror trixie main" > "$tmp/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  say "installing the Compose v2 plugin from Debian trixie's docker-compose package ($mirror)"
  apt-get "${opts[@]}" update -qq
  (cd "$tmp" && apt-get "${opts[@]}" download docker-compose >/dev/null)
  dpkg-deb -x "$tmp"/docker-compose_*.deb "$tmp/x"
  local bin
  bin=$(find "$tmp/x" -path '*cli-plugins/docker-compose' -type f | head -1)
  [ -n "$bin" ] || { say "trixie's docker-compose package has no cli-plugins/docker-compose"; exit 1; }
  install -D -m 0755 "$bin" "$PLUGIN_DIR/docker-compose"
  say "installed $PLUGIN_DIR/docker-compose ($("$PLUGIN_DIR/docker-compose" version --short 2>/dev/null || echo '?'))"
}

start_dockerd() {
  is_root || { say "no Docker engine answers and only root can start one here"; exit 3; }
  mkdir -p "$STATE"
  local attempt pid deadline
  # On a loaded machine dockerd can give up on the containerd it starts
  # ("failed to start containerd: timeout waiting for containerd to start")
  # and exit: start it again, up to three times, each given 180 s to answer.
  for attempt in 1 2 3; do
    say "starting dockerd (log $STATE/dockerd.log, attempt $attempt of 3)"
    nohup dockerd > "$STATE/dockerd.log" 2>&1 &
    pid=$!
    echo "$pid" > "$PIDFILE"
    deadline=$((SECONDS + 180))
    while [ $SECONDS -lt $deadline ]; do
      engine_answers && { say "dockerd answers (pid $pid)"; return 0; }
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
      say "dockerd (pid $pid) did not answer in 180 s; stopping it"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      kill -9 "$pid" 2>/dev/null || true
    else
      say "dockerd exited before answering; what it said (all in $STATE/dockerd.log):"
    fi
    grep -E 'level=(error|fatal)|^panic:' "$STATE/dockerd.log" | tail -n 5 >&2 || true
    # A dockerd killed while it changed a network (a session ended, SIGKILL)
    # can leave a network without its address pool in its store; every later
    # start then panics in libnetwork's reservePools. The store holds only
    # network definitions (compose makes its network again; images and
    # volumes live elsewhere): set it aside and start afresh.
    local kv=/var/lib/docker/network/files/local-kv.db
    if grep -q 'reservePools' "$STATE/dockerd.log" && [ -f "$kv" ]; then
      say "dockerd's network store is damaged (a panic in reservePools): moving $kv to $kv.damaged"
      mv -f "$kv" "$kv.damaged"
    fi
  done
  rm -f "$PIDFILE"
  say "no Docker engine after 3 attempts"
  exit 1
}

missing=()
command -v docker >/dev/null 2>&1 || missing+=(docker.io)
engine_answers || command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
if [ ${#missing[@]} -gt 0 ]; then
  if ! is_root && engine_answers; then
    say "note: ${missing[*]} missing; the engine answers, so only image builds from scratch may fail"
  else
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    apt_install "${missing[@]}"
  fi
fi
docker compose version >/dev/null 2>&1 || install_compose
if engine_answers; then
  say "a Docker engine answers ($(docker info --format '{{.ServerVersion}}' 2>/dev/null))"
else
  start_dockerd
fi
