#!/usr/bin/env bash
# Runs both Python suites whatever the first one's outcome, reports each, and fails if either failed:
# `a && b` never ran the example's tests once the runtime's failed.
cd "$(dirname "$0")/.."

# The runtime runs on the CPU image's stdlib-only python3; the example needs Debian's python3 with torch.
python3 -m pytest -q runtime/python/tests "$@"; runtime=$?
/usr/bin/python3 -m pytest -q examples/image-to-video/tests "$@"; example=$?

echo "test:py: runtime/python/tests exit $runtime, examples/image-to-video/tests exit $example"
[ "$runtime" -eq 0 ] && [ "$example" -eq 0 ]
