#!/bin/sh
# Re-fetches the vendored uPlot (the what-if panel's charts) from the npm
# registry with npm itself, and checks each file against the sums below:
# the committed files are these, byte for byte. To move to another version,
# change VERSION, run it with --update to print the new sums, read the diff,
# and paste them here.
set -eu
VERSION=1.6.32
SUMS="19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f  uPlot.iife.min.js
df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04  uPlot.min.css
8f989229699b4fe2f1a0432d0e9edc338a8a911e250e2d1b01ecd770a5f5b1bd  LICENSE"

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "uplot@$VERSION" >/dev/null && tar xzf "uplot-$VERSION.tgz")
mkdir -p "$work/out"
cp "$work/package/dist/uPlot.iife.min.js" "$work/package/dist/uPlot.min.css" "$work/package/LICENSE" "$work/out/"
if [ "${1:-}" = "--update" ]; then
  (cd "$work/out" && sha256sum uPlot.iife.min.js uPlot.min.css LICENSE)
  exit 0
fi
(cd "$work/out" && printf '%s\n' "$SUMS" | sha256sum -c --quiet -) || {
  echo "fetch-uplot.sh: uplot@$VERSION from the registry does not match the sums recorded here; nothing copied" >&2
  exit 1
}
cp "$work/out/uPlot.iife.min.js" "$work/out/uPlot.min.css" "$work/out/LICENSE" "$here/uplot/"
echo "uplot@$VERSION: the three files checked and copied to $here/uplot/"
