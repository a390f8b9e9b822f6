#!/usr/bin/env bash
# The base image, made without a registry: debootstrap a minimal Debian
# bookworm from the mirror this machine's apt already uses, then import it.
#   docker/base/make-base-image.sh [NAME:TAG]      (default slotwise/base:bookworm)
# Needs root and debootstrap; about 45 s and 117 MB. With a registry you can
# skip this: build the images with BASE_IMAGE=debian:bookworm-slim.
set -euo pipefail
NAME=${1:-slotwise/base:bookworm}
if [ "$(id -u)" != 0 ]; then echo "make-base-image: debootstrap needs root" >&2; exit 3; fi
command -v debootstrap >/dev/null || { echo "make-base-image: apt-get install debootstrap" >&2; exit 3; }
source "$(dirname "$0")/../apt-mirror.sh"
mirror=$(apt_mirror)
rootfs=$(mktemp -d /var/tmp/slotwise-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
echo "make-base-image: debootstrap --variant=minbase bookworm from $mirror" >&2
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$rootfs.log" 2>&1 || {
  tail -n 20 "$rootfs.log" >&2; rm -f "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
tar -C "$rootfs" -c . | docker import -c 'CMD ["/bin/bash"]' - "$NAME" >/dev/null
echo "make-base-image: imported $NAME ($(docker image inspect -f '{{.Size}}' "$NAME" | awk '{printf "%d MB", $1/1e6}'))" >&2
