#!/usr/bin/env bash
# Builds (or reuses) the images, with no registry:
#   slotwise/base:bookworm   debootstrap + import (docker/base/make-base-image.sh)
#   slotwise/hadoop:latest   JRE 17, the Hadoop jars of java-shim/pom.xml, the shim
#   slotwise/policy:latest   the slotwise package and its dependencies
# BASE_IMAGE=debian:bookworm-slim uses a registry's image instead of the
# debootstrapped one. An image is rebuilt only when what it is made of
# changed (docker/stage.py's key, kept as the image's label).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
BASE_IMAGE=${BASE_IMAGE:-slotwise/base:bookworm}
say() { echo "docker images: $*" >&2; }
started=$(date +%s)

if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  if [ "$BASE_IMAGE" = slotwise/base:bookworm ]; then
    docker/base/make-base-image.sh "$BASE_IMAGE"
  else
    say "no image $BASE_IMAGE here and no registry to pull it from"; exit 1
  fi
fi
base_id=$(docker image inspect -f '{{.Id}}' "$BASE_IMAGE")

build() {  # NAME
  local name=$1 tag="slotwise/$1:latest" key have
  key="$("$PY" docker/stage.py "$name" --key)-${base_id:7:12}"
  have=$(docker image inspect -f '{{index .Config.Labels "org.slotwise.key"}}' "$tag" 2>/dev/null || true)
  if [ "$have" = "$key" ]; then
    say "$tag is up to date ($key)"
    return
  fi
  key="$("$PY" docker/stage.py "$name")-${base_id:7:12}"
  say "building $tag from $BASE_IMAGE ..."
  local t0=$(date +%s)
  # The classic builder: BuildKit needs the buildx plugin, which Debian's
  # docker.io does not ship (its deprecation notice is filtered out).
  DOCKER_BUILDKIT=0 docker build -q --build-arg "BASE_IMAGE=$BASE_IMAGE" --label "org.slotwise.key=$key" \
    -t "$tag" "run/docker/context/$name" 2> >(grep -v -E 'DEPRECATED|BuildKit is|environment-variable|^\s*$' >&2) >/dev/null
  say "built $tag in $(( $(date +%s) - t0 )) s ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1e6}'))"
}
build hadoop
build policy
say "images ready in $(( $(date +%s) - started )) s"
