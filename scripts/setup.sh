#!/usr/bin/env bash
# Installs everything hearth needs to build and test, from Debian packages and
# the npm registry only. Idempotent; run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config  # toolchain
  g++-aarch64-linux-gnu                         # checks that the portable layers build for Arm
  qemu-user                                     # ... and runs the kernel test for Arm (qemu-aarch64)
  libhwy-dev:arm64 libgtest-dev:arm64           # ... linked with arm64 builds (multiarch, below)
  clang libclang-rt-dev llvm                    # libFuzzer harnesses under ASan/UBSan (tests/fuzz), llvm-symbolizer
  libhwy-dev                                    # portable SIMD with run-time dispatch
  libsimde-dev                                  # the AVX-512 kernels' test on CPUs without AVX-512 (core/avx512.h)
  libgtest-dev libgmock-dev                     # unit tests
  nlohmann-json3-dev                            # JSON
  libboost-dev                                  # HTTP server: Boost.Beast on Asio (docs/architecture/http.md)
  libpcre2-dev                                  # Unicode regex for tokenizers
  libutf8proc-dev                               # Unicode normalization
  libxxhash-dev                                 # block hashes of the prompt cache
  libavformat-dev libavcodec-dev                # speech-to-text: decode mp3, flac, ogg/opus, m4a, webm in-process
  libswresample-dev libavutil-dev               # ... and resample to Whisper's 16 kHz mono
  libfftw3-dev                                  # FFT of Whisper's log-mel spectrogram
  zlib1g-dev                                    # Whisper's compression-ratio fallback check (zlib, as openai-whisper)
  nginx-light                                   # the replica load-balancing test (docs/deploy.md)
  python3-numpy python3-jinja2                  # independent numeric / template references
  nodejs npm                                    # test tooling (reference tokenizer, API clients)
  chromium                                      # headless browser for the web page test
)

# The arm64 packages above come from Debian's multiarch: arm64 must be a
# foreign architecture of dpkg (apt-get update below then fetches its lists).
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --add-architecture arm64
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node may come from outside Debian on some machines; accept any node >= 18.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs/}"); missing=("${missing[@]/npm/}")
fi
todo=()
for p in "${missing[@]}"; do [ -n "$p" ] && todo+=("$p"); done
if [ ${#todo[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${todo[@]}"
fi

# Node test tooling (reference tokenizers, Jinja, API clients, Playwright).
if [ -f package.json ]; then
  if [ ! -d node_modules ] || [ package.json -nt node_modules ] ||
     { [ -f package-lock.json ] && [ package-lock.json -nt node_modules ]; }; then
    if [ -f package-lock.json ]; then
      npm ci --no-audit --no-fund --loglevel=error
    else
      npm install --no-audit --no-fund --loglevel=error
    fi
    touch node_modules
  fi
fi
