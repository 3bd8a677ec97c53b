#!/usr/bin/env bash
# The 720p image-to-video job through svc's own platform on the GPU machine (issue 40, goal 1): from
# the bundle bench/gpu/bundle.sh made (.gpu/, carried), start the embedded platform, make random
# full-size bf16 weights and rank-64 Lightning adapters on the network volume `wan-weights` (no model
# hub is reachable), deploy examples/image-to-video as a GPU endpoint in its distilled mode, send a
# 720p runsync twice (cold: the worker starts and loads the weights; warm) and probe the mp4.
# Prints one line per figure for bench/video/README.md.
#
#   on the GPU machine (device run, carry [".gpu"]):  bash bench/gpu/platform-720p.sh
#   dry run here, the tiny model on the CPU:          bash bench/gpu/bundle.sh --python 3.11 &&
#                                                     PYTHON=/usr/bin/python3 bash bench/gpu/platform-720p.sh --cpu
set -euo pipefail
cd "$(dirname "$0")/../.."
bundle=$PWD/.gpu
[ -f "$bundle/svc-bundle.tar.xz" ] || { echo "no $bundle: run bash bench/gpu/bundle.sh first" >&2; exit 1; }
config=wan2.2-i2v-a14b size="1280*720" duration=5
[ "${1:-}" = "--cpu" ] && config=tiny size="1280*720" duration=1

work=$(mktemp -d /tmp/svc-gpu-XXXX)
export SVC_PLATFORM_DIR=$work/platform
export SVC_CACHE_DIR=$work/app/.svc/cache # the bundle's installed requirements: the deploy runs no pip
stop() { node "$work/svc/bin/svc.mjs" platform stop >/dev/null 2>&1 || true; }
trap stop EXIT
xz -dc "$bundle/node.xz" >"$work/node" && chmod +x "$work/node"
export PATH=$work:$PATH
tar -C "$work" -xJf "$bundle/svc-bundle.tar.xz"
svc() { node "$work/svc/bin/svc.mjs" "$@"; }
py=${PYTHON:-python3} # the Python with torch: the GPU machine's python3; here Debian's /usr/bin/python3
json() { "$py" -c 'import json,sys; v=json.load(sys.stdin); print(eval("v"+sys.argv[1]))' "$1"; }
say() { echo "[$(date +%T)] $*"; }

if command -v nvidia-smi >/dev/null; then say "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader)"; fi
say "python3 $("$py" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())')"
export SVC_PYTHON_GPU=${SVC_PYTHON_GPU:-$(command -v "$py")}
svc platform start --detach
svc platform status || true
PLATFORM_API_KEY=$(cat "$SVC_PLATFORM_DIR/api-key")

svc volume create wan-weights --size 60 >/dev/null
volume=$(svc volume get wan-weights --json | json '["id"]')
weights=$SVC_PLATFORM_DIR/volumes/$volume
t0=$SECONDS
"$py" bench/gpu/random_weights.py "$weights/Wan2.2-I2V-A14B" "$config" --link-experts --adapters "$weights/lightning"
say "weights on the volume: $(du -sh --apparent-size "$weights" | cut -f1) in $((SECONDS - t0)) s"

say "svc deploy (distilled: WAN_LORA on the volume)"
t0=$SECONDS
(cd "$work/app" && WAN_PYTHON_VERSION=$(cat "$bundle/python-version") WAN_CONFIG=$config WAN_LORA=/platform-volume/lightning svc deploy --json) >"$work/deploy.json"
runsync=$(json '["endpoints"][0]["runsync"]' <"$work/deploy.json")
say "deployed in $((SECONDS - t0)) s: $runsync"

"$py" - "$work/input.png" <<'PY'
import struct, sys, zlib
w, h = 1280, 720   # a gradient test card, PNG by hand: the GPU machine has no ffmpeg
rows = b"".join(b"\x00" + bytes(v for x in range(w) for v in (x * 255 // w, y * 255 // h, 128)) for y in range(h))
chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
PY
cat >"$work/body.json" <<JSON
{"input": {"prompt": "a test card slowly zooms in", "image": "data:image/png;base64,$(base64 -w0 "$work/input.png")",
  "size": "$size", "duration": $duration, "seed": 42}}
JSON
for run in cold warm; do
  t0=$(date +%s.%N)
  curl -sS -X POST "$runsync" -H "Authorization: Bearer $PLATFORM_API_KEY" -H "Content-Type: application/json" \
    --data-binary @"$work/body.json" >"$work/job-$run.json"
  took=$("$py" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
  status=$(json '["status"]' <"$work/job-$run.json")
  say "runsync $run: $status in $took s; $(json '["output"]' <"$work/job-$run.json" 2>/dev/null | cut -c1-400)"
  [ "$status" = COMPLETED ] || { cat "$work/job-$run.json"; svc logs image-to-video -n 60 || true; exit 1; }
done
curl -sS -f -o "$work/video.mp4" -H "Authorization: Bearer $PLATFORM_API_KEY" "$(json '["output"]["video_url"]' <"$work/job-warm.json")"
site=$(ls -d "$work"/app/.svc/cache/deps/*/site-packages | head -n 1)
PYTHONPATH=$site "$py" -c '
import av, sys
with av.open(sys.argv[1]) as f:
    s = f.streams.video[0]
    print(f"mp4: {s.codec_context.name} {s.codec_context.width}x{s.codec_context.height}, {sum(1 for _ in f.decode(s))} frames")' "$work/video.mp4"
svc platform status || true
