#!/usr/bin/env bash
# The layers below the server must build for 64-bit Arm (NEON through
# Highway's portable layer and the NEON int8 kernels, no x86 intrinsics
# outside x86 guards). This compiles them with Debian's aarch64 cross
# compiler, then links the core kernel test (tests/unit/core_ops_test.cpp)
# for aarch64 and runs it under qemu-user emulation on CPU models with and
# without the dot-product extension. Emulation checks correctness only: it
# says nothing about speed on Arm hardware.
#
# Needs (scripts/setup.sh): g++-aarch64-linux-gnu, qemu-user, and the arm64
# multiarch libhwy-dev and libgtest-dev. Compiles one file at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$SECONDS
cxx=(aarch64-linux-gnu-g++ -std=c++20 -Wall -Wextra -Wno-unused-parameter -Werror=return-type -Isrc)

n=0
shopt -s globstar
# The core layer at -O2: it is linked and run below.
core_objs=()
for f in src/core/*.cpp; do
  "${cxx[@]}" -O2 -c "$f" -o "$out/core$n.o"
  core_objs+=("$out/core$n.o")
  n=$((n + 1))
done
for f in src/io/*.cpp src/model/*.cpp src/engine/**/*.cpp; do
  "${cxx[@]}" -O1 -c "$f" -o "$out/$n.o"
  n=$((n + 1))
done
echo "arm build: $n files compiled for aarch64 ($((SECONDS - start)) s)"

# The kernel test, linked against the arm64 multiarch gtest and Highway.
"${cxx[@]}" -O2 -c tests/unit/core_ops_test.cpp -o "$out/core_ops_test.o"
aarch64-linux-gnu-g++ -o "$out/core_ops_test" "$out/core_ops_test.o" "${core_objs[@]}" \
  -lgtest_main -lgtest -lhwy -pthread
echo "arm build: core_ops_test linked for aarch64 ($((SECONDS - start)) s)"

# Runs the test under qemu-aarch64. -L /: the arm64 loader and libraries are
# Debian's multiarch ones (/lib/ld-linux-aarch64.so.1, /usr/lib/aarch64-linux-gnu).
# $1: what the run is for; $2: qemu's -cpu; $3: the int8 kernels it must pick;
# then environment assignments for the test.
runs=0
run() {
  local what=$1 cpu=$2 want=$3
  shift 3
  local t0=$SECONDS log="$out/run$runs.log"
  runs=$((runs + 1))
  if ! env "$@" HEARTH_EXPECT_INT8_TARGET="$want" \
      qemu-aarch64 -L / -cpu "$cpu" "$out/core_ops_test" >"$log" 2>&1; then
    cat "$log"
    echo "arm test FAILED: $what (qemu -cpu $cpu${*:+, $*})"
    exit 1
  fi
  local passed features
  passed=$(grep -o '\[  PASSED  \] [0-9]* tests\?' "$log" | grep -o '[0-9]*' || echo "?")
  features=$(grep -o 'cpu features: .*' "$log" || echo "cpu features: ?")
  echo "arm test: $what: qemu -cpu $cpu${*:+, $*}: $passed core_ops tests passed;" \
    "${features} ($((SECONDS - t0)) s)"
}
run "SDOT kernels" max neon+dotprod
run "plain NEON kernels, switched" max neon HEARTH_SIMD=neon-nodot
run "plain NEON kernels, detected" cortex-a53 neon
run "portable float path" max none HEARTH_NO_INT8=1
run "no int8 kernel, switched" max none HEARTH_SIMD=scalar
echo "arm check: passed in $((SECONDS - start)) s"
