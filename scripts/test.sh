#!/usr/bin/env bash
# Sets everything up and runs every test: unit tests (release build and an
# AddressSanitizer + UBSan build), the fuzz harnesses for a bounded time, the
# NumPy numerics checks, the tokenizer and chat-template comparisons against
# the reference implementations, and the server end-to-end tests. Prints one
# summary line per suite and exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc)

bash scripts/setup.sh || { echo "setup failed"; exit 1; }

build() {  # build DIR [cmake options...]
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null && cmake --build "$dir" -j"$jobs"
}

# Each suite's output is kept, and a failed suite's last lines are printed
# again at the end: CI shows only the tail of this script's output.
failed=()
failed_logs=()
passed=0
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
suite() {  # suite NAME COMMAND...
  local name=$1; shift
  local log="$logs/$((passed + ${#failed[@]})).log"
  echo "=== $name"
  # Not a pipe: a server a suite leaves behind must not keep tee, and so
  # this script, waiting.
  if "$@" > >(tee "$log") 2>&1; then
    echo "--- $name: ok"; passed=$((passed + 1)); rm -f "$log"
  else
    echo "--- $name: FAILED"; failed+=("$name"); failed_logs+=("$log")
  fi
}

build build -DCMAKE_BUILD_TYPE=Release || { echo "release build failed"; exit 1; }
suite "unit tests" ctest --test-dir build --output-on-failure -j"$jobs"

build build-asan -DCMAKE_BUILD_TYPE=Debug -DHEARTH_SANITIZE=ON || { echo "sanitizer build failed"; exit 1; }
suite "unit tests (ASan+UBSan)" env ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j"$jobs"

# Every parser of outside bytes under libFuzzer with ASan+UBSan: the
# regression inputs, then 20 s per harness (docs/fuzzing.md).
suite "fuzzing (libFuzzer, ASan+UBSan)" env FUZZ_JOBS="$jobs" bash tests/fuzz/run.sh

# Debian's python3 carries numpy and jinja2; a python3 earlier on PATH may not.
suite "Arm (aarch64) build of the portable layers, kernel tests under qemu-user" bash scripts/check_arm_build.sh

PY=/usr/bin/python3
suite "command line" bash tests/cli/test_cli.sh build/hearth
[ -f tests/numerics/test_numerics.py ] && suite "numerics vs NumPy" $PY tests/numerics/test_numerics.py --hearth build/hearth
# Again on the lower kernel targets (docs/architecture/kernels.md, "Kernels"), so the
# kernels every CPU kind takes meet the same tolerances whatever CPU runs CI.
for target in avx2 avx2-novnni scalar; do
  suite "numerics vs NumPy (HEARTH_SIMD=$target)" env HEARTH_SIMD=$target \
    $PY tests/numerics/test_numerics.py --hearth build/hearth
done
[ -f tests/numerics/test_audio.py ] && suite "audio input (decode, log-mel) vs NumPy" $PY tests/numerics/test_audio.py --hearth build/hearth
suite "whisper vs NumPy" $PY tests/numerics/test_whisper.py --hearth build/hearth
suite "Silero VAD vs NumPy" $PY tests/numerics/test_vad.py --hearth build/hearth
suite "whisper words vs NumPy" $PY tests/numerics/test_whisper_words.py --hearth build/hearth
suite "whisper streaming = one-shot" $PY tests/numerics/test_whisper_stream.py --hearth build/hearth
[ -f tests/text/compare_tokenizers.mjs ] && suite "tokenizers vs reference" node tests/text/compare_tokenizers.mjs --hearth build/hearth
[ -f tests/text/compare_whisper_tokenizer.mjs ] && suite "whisper tokenizer vs reference" node tests/text/compare_whisper_tokenizer.mjs --hearth build/hearth
[ -f tests/text/test_templates.py ] && suite "chat templates vs Jinja2" $PY tests/text/test_templates.py --hearth build/hearth
[ -f tests/server/run.sh ] && suite "server end-to-end" bash tests/server/run.sh build/hearth
# The hostile-client tests again on the sanitizer build: a report aborts the
# server, and leaks at exit fail its exit status.
[ -f tests/server/run.sh ] && suite "server front door (ASan+UBSan)" env ASAN_OPTIONS=detect_leaks=1 \
  bash tests/server/run.sh build-asan/hearth tests/server/front_door_protocol.test.mjs tests/server/front_door_clients.test.mjs \
  tests/server/api.test.mjs
# The audio routes' bad input and limits (the tests that decode little: Whisper at -O0 is slow).
[ -f tests/server/run.sh ] && suite "audio routes' bad input (ASan+UBSan)" env ASAN_OPTIONS=detect_leaks=1 \
  TEST_NAME_PATTERN='bad requests|vad fields|limits|without' \
  bash tests/server/run.sh build-asan/hearth tests/server/audio.test.mjs tests/server/audio_sessions.test.mjs

[ ${#failed[@]} -gt 0 ] && sleep 1  # the last suite's tee may still be writing
for i in "${!failed[@]}"; do
  echo "=== the last lines of \"${failed[$i]}\", which failed"
  tail -n 60 "${failed_logs[$i]}"
done
[ ${#failed[@]} -gt 0 ] && echo "failed suites: ${failed[*]}"
echo "suites: $passed passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
