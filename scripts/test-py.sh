#!/usr/bin/env bash
# Runs both Python suites side by side (they share nothing), whatever either's outcome, prints each
# whole when it ends and fails if either failed: `a && b` never ran the example's tests once the
# runtime's failed.
cd "$(dirname "$0")/.."
logs=$(mktemp -d "${TMPDIR:-/tmp}/svc-test-py-XXXXXX")
trap 'rm -rf "$logs"' EXIT

# The runtime runs on the CPU image's stdlib-only python3; the example needs Debian's python3 with torch.
python3 -m pytest -q runtime/python/tests "$@" >"$logs/runtime" 2>&1 &
runtime_pid=$!
/usr/bin/python3 -m pytest -q examples/image-to-video/tests "$@" >"$logs/example" 2>&1 &
example_pid=$!
wait $runtime_pid; runtime=$?
cat "$logs/runtime"
wait $example_pid; example=$?
cat "$logs/example"

echo "test:py: runtime/python/tests exit $runtime, examples/image-to-video/tests exit $example"
[ "$runtime" -eq 0 ] && [ "$example" -eq 0 ]
