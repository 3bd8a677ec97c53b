#!/usr/bin/env bash
# One-time machine setup for svc development and CI: system packages, then Node and Python deps.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's python3 with CPU PyTorch runs the "GPU image" workers and the video model here;
# ffmpeg encodes and probes the mp4 output.
need=()
/usr/bin/python3 -c "import torch" 2>/dev/null || need+=(python3-torch)
/usr/bin/python3 -m pytest --version >/dev/null 2>&1 || need+=(python3-pytest)
{ command -v ffmpeg && command -v ffprobe; } >/dev/null || need+=(ffmpeg)
# bubblewrap isolates the embedded platform's workers (docs/platform.md, "Image environments").
command -v bwrap >/dev/null || need+=(bubblewrap)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi

# The CPU image's interpreter needs only the stdlib; pytest runs the runtime's tests.
python3 -m pytest --version >/dev/null 2>&1 || python3 -m pip install -q pytest

# better-sqlite3 compiles from source where no prebuilt binary can be fetched (about a minute).
npm ci --no-audit --no-fund
