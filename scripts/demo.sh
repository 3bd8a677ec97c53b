#!/usr/bin/env bash
# The main job, offline on one machine: deploy the spec's image-to-video endpoint with svc to the
# embedded platform, call it with runsync, download the mp4 and measure it with ffprobe.
# No GPU and no published weights here, so the example's tiny model is selected explicitly
# (WAN_CONFIG=tiny; also tiny-2.1 or tiny-5b); set WAN_CONFIG / WAN_CHECKPOINT_DIR to run a real one.
# The worker decodes the image and encodes the mp4 with the artifact's PyAV; ffmpeg/ffprobe here
# only make the input picture and measure the result.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
svc() { node "$repo/bin/svc.mjs" "$@"; }
source "$repo/scripts/_demo-hint.sh"
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s);console.log(eval("v"+process.argv[1]))})' "$1"; }

export WAN_CONFIG="${WAN_CONFIG:-tiny}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The example declares the network volume wan-weights (its weights' home); the tiny model needs nothing on it.
svc volume get wan-weights >/dev/null 2>&1 || svc volume create wan-weights --size 100 >/dev/null
echo "== svc deploy (examples/image-to-video, WAN_CONFIG=$WAN_CONFIG)"
(cd examples/image-to-video && svc deploy --json) > "$work/deploy.json"
runsync=$(json '.endpoints.find(e=>e.name==="image-to-video").runsync' < "$work/deploy.json")
if [ -z "${PLATFORM_API_URL:-}" ]; then
  PLATFORM_API_KEY=$(cat "${SVC_PLATFORM_DIR:-$HOME/.svc/platform}/api-key")
fi

echo "== POST $runsync"
ffmpeg -loglevel error -y -f lavfi -i testsrc=size=640x360:rate=1 -frames:v 1 "$work/input.png"
cat > "$work/body.json" <<JSON
{"input": {"prompt": "a test card slowly zooms in", "image": "data:image/png;base64,$(base64 -w0 "$work/input.png")",
  "negative_prompt": "", "size": "1280*720", "num_inference_steps": 30, "guidance": 5, "duration": 5,
  "flow_shift": 5, "seed": 42, "enable_prompt_optimization": false, "enable_safety_checker": true}}
JSON
curl -sS -X POST "$runsync" -H "Authorization: Bearer $PLATFORM_API_KEY" -H "Content-Type: application/json" \
  --data-binary @"$work/body.json" > "$work/job.json"
node -e 'const j=require(process.argv[1]); console.log(JSON.stringify(j, null, 2))' "$work/job.json"
[ "$(json '.status' < "$work/job.json")" = COMPLETED ] || { echo "the job did not complete" >&2; exit 1; }

video_url=$(json '.output.video_url' < "$work/job.json")
echo "== GET $video_url"
curl -sS -f -o "$work/video.mp4" -H "Authorization: Bearer $PLATFORM_API_KEY" "$video_url"
ffprobe -v error -select_streams v:0 -count_frames \
  -show_entries stream=codec_name,width,height,r_frame_rate,nb_read_frames -of default=noprint_wrappers=1 "$work/video.mp4"
mkdir -p .svc && cp "$work/video.mp4" .svc/demo.mp4
echo "== saved .svc/demo.mp4"
if [ -z "${PLATFORM_API_URL:-}" ]; then
  platform_stop_hint
fi
