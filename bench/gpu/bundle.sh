#!/usr/bin/env bash
# Packs what svc's platform needs on the GPU machine (issue 40), which has no Node and no package
# index: Node itself, the published package (built dist/) with its production dependencies and
# better-sqlite3's built addon, and examples/image-to-video with its dependencies already installed
# for the GPU image's Python (the build's dependency cache, so `svc deploy` there runs no pip).
# Everything lands in .gpu/ (ignored by git), carried with `carry: [".gpu"]`; the working tree and
# what is carried travel together within 64 MiB, so the script says the size and fails above 60 MiB.
#
#   bash bench/gpu/bundle.sh [--python 3.12]    then, here, a CPU dry run:  bash bench/gpu/platform-720p.sh --cpu
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON_VERSION=3.12 # the GPU image's python3 (bench/video/README.md: torch 2.11 on Python 3.12)
[ "${1:-}" = "--python" ] && PYTHON_VERSION=$2
LIMIT=$((60 << 20))

out=.gpu
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
rm -rf "$out"
mkdir -p "$out" "$stage/svc" "$stage/app"

echo "bundle: node $(node --version)"
xz -T0 -9 -c "$(readlink -f "$(command -v node)")" >"$out/node.xz"

echo "bundle: the package as npm publishes it (npm pack builds dist/), with its production dependencies"
tarball=$(npm pack --silent --pack-destination "$stage" | tail -n 1)
tar -xzf "$stage/$tarball" -C "$stage/svc" --strip-components=1
cp package-lock.json "$stage/svc/"
(cd "$stage/svc" && npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error)
addon=node_modules/better-sqlite3/build/Release/better_sqlite3.node
mkdir -p "$stage/svc/$(dirname "$addon")"
cp "$addon" "$stage/svc/$addon"
rm -f "$stage/svc/package-lock.json"

echo "bundle: examples/image-to-video, its requirements installed for Python $PYTHON_VERSION"
cp -r examples/image-to-video/. "$stage/app/"
rm -rf "$stage/app/.svc" "$stage/app/tests"
# the installed tree goes into the bundle: SVC_CACHE_DIR is where the build keeps it (docs/deploy.md)
(cd "$stage/app" && SVC_CACHE_DIR="$stage/app/.svc/cache" WAN_PYTHON_VERSION=$PYTHON_VERSION node "$stage/svc/bin/svc.mjs" build >/dev/null)
rm -rf "$stage/app/.svc/artifact.tar.gz" "$stage/app/.svc/.build"

tar -C "$stage" -cf - svc app | xz -T0 -6 >"$out/svc-bundle.tar.xz"
echo "$PYTHON_VERSION" >"$out/python-version" # the deploy there builds for the same Python, so it finds the installed tree
size=$(du -cb "$out"/* | tail -n 1 | cut -f1)
echo "bundle: $out $((size >> 20)) MiB (node $(($(stat -c %s "$out/node.xz") >> 20)) MiB, svc + app $(($(stat -c %s "$out/svc-bundle.tar.xz") >> 20)) MiB)"
[ "$size" -le "$LIMIT" ] || {
  echo "bundle: over $((LIMIT >> 20)) MiB: the working tree and .gpu travel within 64 MiB" >&2
  exit 1
}
