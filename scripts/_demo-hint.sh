# The demo's closing hint (sourced by scripts/demo.sh): the command that stops the platform the demo
# used. It names that platform's state folder, so it stops the right one from a shell where
# SVC_PLATFORM_DIR is not exported (as when it was set only for `npm run demo`).
platform_stop_hint() {
  local dir
  dir=$(cd "${SVC_PLATFORM_DIR:-$HOME/.svc/platform}" 2>/dev/null && pwd || echo "${SVC_PLATFORM_DIR:-$HOME/.svc/platform}")
  printf '== the embedded platform keeps running (state in %s); stop it with: ./bin/svc.mjs platform stop --dir %q\n' "$dir" "$dir"
}
