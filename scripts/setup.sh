#!/usr/bin/env bash
# One-time machine setup for svc development and CI: system packages, then Node and Python deps.
set -euo pipefail
cd "$(dirname "$0")/.."

# Jaeger receives the platform's OTLP traces in test/platform/traces.test.ts: built from the module proxy
# into $HOME/go/bin, skipped once there. A large Go program (2,327 packages, 678 s of CPU here), so it
# builds in the background while the rest of the setup downloads and installs, and the setup waits
# for it at the end (its log: $JAEGER_LOG). `go install …@v1.76.0` refuses its go.mod's replace
# directive, so it is built inside its module.
JAEGER_BIN="$HOME/go/bin/jaeger"
JAEGER_LOG=${TMPDIR:-/tmp}/svc-setup-jaeger.log
jaeger_build=""
if [ ! -x "$JAEGER_BIN" ] && command -v go >/dev/null; then
  (
    jaeger_src=$(go mod download -json github.com/jaegertracing/jaeger@v1.76.0 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    cd "$jaeger_src" && GOFLAGS=-buildvcs=false nice -n 5 go build -trimpath -o "$JAEGER_BIN" ./cmd/jaeger
  ) >"$JAEGER_LOG" 2>&1 &
  jaeger_build=$!
fi

# Debian's python3 with CPU PyTorch runs the "GPU image" workers and the video model here;
# ffmpeg encodes and probes the mp4 output.
need=()
/usr/bin/python3 -c "import torch" 2>/dev/null || need+=(python3-torch)
/usr/bin/python3 -m pytest --version >/dev/null 2>&1 || need+=(python3-pytest)
{ command -v ffmpeg && command -v ffprobe; } >/dev/null || need+=(ffmpeg)
# bubblewrap isolates the embedded platform's workers (docs/platform.md, "Image environments").
command -v bwrap >/dev/null || need+=(bubblewrap)
# slirp4netns gives each sandboxed worker's own network namespace its egress (user-mode networking,
# no route to the host's loopback or addresses: docs/platform.md, "Threat model").
command -v slirp4netns >/dev/null || need+=(slirp4netns)
# headless Chromium renders `svc build --analyze`'s treemap in test/plugins/analyze.test.ts (driven by playwright-core).
command -v chromium >/dev/null || need+=(chromium)
# Another apt or dpkg (unattended-upgrades, a second setup) holds its locks: wait for it, up to
# APT_LOCK_WAIT_S seconds, instead of exiting 100 at once. DPkg::Lock::Timeout covers dpkg's lock;
# `apt-get update`'s lists lock has no such option, so a lock failure is retried until the deadline.
APT_LOCK_WAIT_S=${APT_LOCK_WAIT_S:-300}
apt_get() {
  local deadline=$((SECONDS + APT_LOCK_WAIT_S)) err said=""
  err=$(mktemp)
  until $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT_S" "$@" 2>"$err"; do
    if ! grep -q "Could not get lock" "$err" || [ $SECONDS -ge $deadline ]; then
      cat "$err" >&2; rm -f "$err"; return 1
    fi
    [ -n "$said" ] || echo "setup: another apt holds its lock; waiting for it (up to ${APT_LOCK_WAIT_S} s)" >&2
    said=1; sleep 3
  done
  cat "$err" >&2; rm -f "$err"
}
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  apt_get update -qq
  apt_get install -y -qq "${need[@]}"
fi

# Prometheus scrapes a real platform in test/platform/metrics.test.ts (the test runs the binary itself on a
# free port). Without recommends (no node-exporter); where systemd runs, its service is kept off port 9090.
if ! command -v prometheus >/dev/null; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends prometheus
  if [ -d /run/systemd/system ]; then $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true; fi
fi

# The CPU image's interpreter needs only the stdlib; pytest runs the runtime's tests.
python3 -m pytest --version >/dev/null 2>&1 || python3 -m pip install -q pytest
# boto3 is the second, independent S3 client of the volumes' tests (test/platform/volumes-s3.test.ts).
python3 -c "import boto3" 2>/dev/null || python3 -m pip install -q boto3==1.44.8
# Ray runs the workers of test/platform/ray-workers.test.ts (the platform's Ray backend): a real
# head and nodes on this machine (about 18 s and 310 MB to install).
python3 -c "import ray, sys; sys.exit(ray.__version__ != '2.60.0')" 2>/dev/null || python3 -m pip install -q "ray[default]==2.60.0"

# uv installs an app's requirements several times faster than pip (plugins/pip-install.ts; pip stays
# the fallback): a pinned release beside python3, where svc looks for it first (about 6 s, 38 MB).
python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('uv') != '0.13.9')" 2>/dev/null || python3 -m pip install -q uv==0.13.9

# better-sqlite3 compiles from source where no prebuilt binary can be fetched (about a minute).
npm ci --no-audit --no-fund

if [ -n "$jaeger_build" ]; then
  echo "setup: waiting for the Jaeger build (log: $JAEGER_LOG)"
  wait "$jaeger_build" || { cat "$JAEGER_LOG" >&2; exit 1; }
fi
