#!/usr/bin/env bash
# Runs every server end-to-end test against a hearth binary:
#   tests/server/run.sh build/hearth
# The tests start `hearth serve` on free loopback ports and drive it with
# client libraries (the official `openai`, Anthropic and Ollama packages, the
# Vercel AI SDK, LangChain, LlamaIndex; node's built-in test runner), a headless
# Debian chromium through playwright-core for the web page, and compare
# greedy text with `hearth generate`. Ends with one summary line; exits
# non-zero if anything failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build/hearth}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
if [ ! -x "$bin" ]; then echo "server tests: no hearth binary at $bin"; echo "server tests: 0 passed, 1 failed"; exit 1; fi
if [ ! -d "$root/node_modules/openai" ]; then
  echo "server tests: node_modules/openai missing (run scripts/setup.sh)"; echo "server tests: 0 passed, 1 failed"; exit 1
fi
shift || true

tap=$(mktemp)
trap 'rm -f "$tap"' EXIT
cd "$root"
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(tests/server/*.test.mjs)
# TEST_NAME_PATTERN: only the tests whose names match (the sanitizer run's selection).
pattern=()
[ -n "${TEST_NAME_PATTERN:-}" ] && pattern=(--test-name-pattern="$TEST_NAME_PATTERN")
HEARTH_BIN="$bin" node --test --test-concurrency=1 "${pattern[@]}" \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tap" \
  "${files[@]}"
rc=$?
pass=$(grep -E '^# pass ' "$tap" | awk '{print $3}')
fail=$(grep -E '^# fail ' "$tap" | awk '{print $3}')
cancelled=$(grep -E '^# cancelled ' "$tap" | awk '{print $3}')
skip=$(grep -E '^# skipped ' "$tap" | awk '{print $3}')
fail=$(( ${fail:-0} + ${cancelled:-0} ))
# A failing before/after hook fails the run without failing a test.
[ "$rc" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1
echo "server tests: ${pass:-0} passed, $fail failed, ${skip:-0} skipped"
[ "$rc" -eq 0 ] && [ "$fail" -eq 0 ]
