#!/usr/bin/env bash
# The benchmark suite: `hearth bench` on random-weight checkpoints of real
# model shapes (Qwen3-0.6B, Llama-3.2-1B) in BF16, MLX 8-bit and MLX 4-bit
# (group 64), at 1 and 2 threads, printed as a Markdown table with the memory
# bandwidth each run measured. Not a test: numbers go to docs/performance/engine.md.
# Usage: bench/suite.sh [build/hearth] [repeats]
set -euo pipefail
hearth=${1:-build/hearth}
repeats=${2:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "| model | format | threads | prefill 64 tok/s | prefill 512 tok/s | decode tok/s | MB/token | decode GB/s | of bandwidth | output-head GEMV of bandwidth | bandwidth GB/s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for spec in "qwen3 qwen3-0.6b" "llama llama-3.2-1b"; do
  set -- $spec
  arch=$1 preset=$2
  for fmt in bf16 mlx8 mlx4; do
    out="$dir/$preset-$fmt"
    quant=()
    [ "$fmt" != bf16 ] && quant=(--quant "$fmt" --group-size 64)
    "$hearth" mkmodel --arch "$arch" --preset "$preset" --dtype bf16 "${quant[@]}" --seed 1 --out "$out" >/dev/null
    for threads in 1 2; do
      echo "bench: $preset $fmt, $threads thread(s)" >&2
      "$hearth" bench --model "$out" --threads "$threads" --repeats "$repeats" --json 2>/dev/null |
        node -e '
          const b = JSON.parse(require("fs").readFileSync(0, "utf8"));
          const [preset, fmt, threads] = process.argv.slice(1);
          const p = Object.fromEntries(b.prefill.map((x) => [x.tokens, x.tokens_per_second]));
          const f = (x, d = 1) => x.toFixed(d);
          console.log(`| ${preset} | ${fmt} | ${threads} | ${f(p[64])} | ${f(p[512])} | ${f(b.decode.tokens_per_second)} | ` +
            `${f(b.decode.bytes_per_token / 1e6, 0)} | ${f(b.decode.gbps)} | ${f(100 * b.decode.fraction_of_bandwidth, 0)}% | ` +
            `${f(100 * b.output_head_gemv.fraction_of_bandwidth, 0)}% | ${f(b.memory_read_bandwidth_gbps)} |`);
        ' "$preset" "$fmt" "$threads"
    done
    rm -rf "$out"
  done
done
