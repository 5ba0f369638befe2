#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, -DHEARTH_FUZZ=ON: ASan + UBSan),
# replays every regression input in tests/fuzz/regressions/<name>/, then
# fuzzes each harness for a bounded time from a scratch copy of its seed
# corpus (tests/fuzz/corpus/<name>/; nothing is written into the repository).
# Prints a line per harness and a summary; exits non-zero if an input
# crashed, hung, ran out of memory or broke a harness's check. A failing
# input is saved under BUILD/fuzz-artifacts/ with the command to reproduce it;
# once fixed, copy it to tests/fuzz/regressions/<name>/. See docs/fuzzing.md.
#
# Usage: tests/fuzz/run.sh [HARNESS...]      (default: all; names like server_request)
# Environment: FUZZ_SECONDS (per harness, default 20), FUZZ_BUILD (default
# build-fuzz), FUZZ_JOBS (build parallelism, default nproc).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
seconds=${FUZZ_SECONDS:-20}
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}

if ! command -v clang++ >/dev/null; then
  echo "fuzzing needs clang (scripts/setup.sh installs it)"
  exit 1
fi
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DHEARTH_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null || { echo "fuzz: configure failed"; exit 1; }

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cpp; do n=$(basename "$f" .cpp); names+=("${n%_fuzz}"); done
fi
targets=()
for n in "${names[@]}"; do targets+=("${n}_fuzz"); done
cmake --build "$build" -j"$jobs" --target "${targets[@]}" >"$build/fuzz-build.log" 2>&1 ||
  { tail -n 40 "$build/fuzz-build.log"; echo "fuzz: build failed (full log: $build/fuzz-build.log)"; exit 1; }

artifacts="$build/fuzz-artifacts"
logs="$build/fuzz-logs"
mkdir -p "$artifacts" "$logs"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
replayed=0
total_runs=0
start=$SECONDS
for n in "${names[@]}"; do
  bin="$build/${n}_fuzz"
  log="$logs/$n.log"
  : >"$log"
  # Every regression input, once each.
  regressions=()
  if [ -d "tests/fuzz/regressions/$n" ]; then
    while IFS= read -r -d '' f; do regressions+=("$f"); done < <(find "tests/fuzz/regressions/$n" -type f -print0 | sort -z)
  fi
  if [ ${#regressions[@]} -gt 0 ]; then
    if ! "$bin" -timeout=30 "${regressions[@]}" >>"$log" 2>&1; then
      tail -n 30 "$log"
      echo "$n: a regression input fails again (log: $log)"
      failed+=("$n")
      continue
    fi
    replayed=$((replayed + ${#regressions[@]}))
  fi
  # Fuzz from a scratch copy of the seeds.
  work="$scratch/$n"
  mkdir -p "$work"
  [ -d "tests/fuzz/corpus/$n" ] && cp "tests/fuzz/corpus/$n"/* "$work"/ 2>/dev/null
  seeds=$(find "$work" -type f | wc -l)
  dict=()
  [ -f "tests/fuzz/$n.dict" ] && dict=(-dict="tests/fuzz/$n.dict")
  t0=$SECONDS
  if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 -print_final_stats=1 "${dict[@]}" \
       -artifact_prefix="$artifacts/$n-" "$work" >>"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    total_runs=$((total_runs + ${runs:-0}))
    echo "$n: ok, ${runs:-?} inputs in $((SECONDS - t0)) s, corpus $seeds -> $(find "$work" -type f | wc -l), ${#regressions[@]} regressions"
  else
    grep -E "^(==[0-9]+==ERROR|SUMMARY|.*runtime error|fuzz harness:|ALARM|Test unit written to)" "$log" | head -n 8
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    echo "$n: FAILED (log: $log)${crash:+; reproduce: $bin $crash}"
    # A CI machine's files are gone after the run; a small input survives in its log.
    if [ -f "$crash" ] && [ "$(stat -c %s "$crash")" -le 4096 ]; then
      echo "$n: the input, base64 (base64 -d > input):"
      base64 -w 0 "$crash"; echo
    fi
    failed+=("$n")
  fi
done

echo "fuzzing: ${#names[@]} harnesses, $((${#names[@]} - ${#failed[@]})) ok, ${#failed[@]} failed; $replayed regression inputs replayed; $total_runs inputs run in $((SECONDS - start)) s (${seconds} s each)"
[ ${#failed[@]} -eq 0 ]
