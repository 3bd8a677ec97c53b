#!/usr/bin/env bash
# `npm test`: the whole suite. Biome first (about a second: a format slip fails before anything
# starts), then the two typechecks, vitest and both pytest suites side by side. They share nothing,
# and vitest's files spend much of their time waiting on workers, sockets and installers, so the
# typechecks' and pytest's CPU fits in those waits instead of after them (CONTRIBUTING.md).
# vitest prints as it runs; the typecheck and pytest print their whole output when each ends. Exit
# status: non-zero when any part failed; the last line gives each part's. Arguments go to vitest.
set -u
cd "$(dirname "$0")/.."

npm run --silent lint || exit $?

logs=$(mktemp -d "${TMPDIR:-/tmp}/svc-test-XXXXXX")
trap 'rm -rf "$logs"' EXIT
# Each part in a process group of its own: an interrupt ends each whole (Ctrl-C reaches vitest, the
# terminal's foreground; the parts in the background are ended here when it stops on a signal).
set -m
groups=()
stop_all() {
  for group in "${groups[@]}"; do kill -TERM -- "-$group" 2>/dev/null; done
}
trap 'stop_all; exit 143' TERM
trap 'stop_all; exit 130' INT

# Runs a part in the background, its output held until it ends; its exit status is in $logs/<name>.rc.
part() {
  local name=$1
  shift
  (
    "$@" >"$logs/$name.out" 2>&1
    echo $? >"$logs/$name.rc"
    {
      flock 9 # one part's output at a time when two end together
      printf '\n--- %s (exit %s) ---\n' "$name" "$(cat "$logs/$name.rc")"
      cat "$logs/$name.out"
    } 9>"$logs/print.lock"
  ) &
  groups+=($!)
}

part typecheck npm run --silent typecheck
part pytest bash scripts/test-py.sh
npx vitest run "$@"
vitest=$?
if [ "$vitest" -gt 128 ]; then
  stop_all
  exit "$vitest"
fi
wait

typecheck=$(cat "$logs/typecheck.rc")
pytest=$(cat "$logs/pytest.rc")
echo "npm test: lint 0, typecheck $typecheck, vitest $vitest, pytest $pytest"
[ "$typecheck" -eq 0 ] && [ "$vitest" -eq 0 ] && [ "$pytest" -eq 0 ]
