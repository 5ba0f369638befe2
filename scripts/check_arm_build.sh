#!/usr/bin/env bash
# The layers below the server must build for 64-bit Arm (NEON through
# Highway's portable layer, no x86 intrinsics outside x86 guards). This
# compiles them with Debian's aarch64 cross compiler; nothing is linked or run.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
n=0
shopt -s globstar
for f in src/core/*.cpp src/io/*.cpp src/model/*.cpp src/engine/**/*.cpp; do
  aarch64-linux-gnu-g++ -std=c++20 -O1 -Wall -Wextra -Wno-unused-parameter -Werror=return-type -Isrc \
    -c "$f" -o "$out/$n.o"
  n=$((n + 1))
done
echo "arm build: $n files compiled for aarch64"
