#!/usr/bin/env bash
# hearth vs llama.cpp on the same random weights, measured in the same run.
#
#   bash bench/compare.sh [--hearth build/hearth] [--threads 1,2] [--rounds 2]
#                         [--pairs all|LIST] [--decode 128] [--keep DIR]
#                         [--llamacpp-cpu VARIANT]
#
# For each pair, `hearth mkmodel --gguf` writes one checkpoint twice (the
# safetensors hearth loads, the GGUF llama.cpp loads: the same seed, so the
# same weights, in each engine's own format of the same size). Then, for each
# thread count, the two benchmarks alternate (hearth, llama.cpp, hearth,
# llama.cpp, ... --rounds times) so a noisy neighbour slows both alike; each
# engine's best round is reported. Both time the same things: prefill of 64
# and 512 random token ids in one batch, and greedy decode of --decode tokens
# (see bench/llamacpp_compare.mjs). hearth's bench also measures the
# machine's memory read bandwidth each run; its median is printed.
#
# Pairs (hearth format ~ llama.cpp format):
#   q3-bf16   qwen3-0.6b    bf16                ~ F16
#   q3-8      qwen3-0.6b    MLX 8-bit, g64      ~ Q8_0 (blocks of 32)
#   q3-4      qwen3-0.6b    MLX 4-bit, g64      ~ Q4_0 (blocks of 32)
#   l1b-4     llama-3.2-1b  MLX 4-bit, g64      ~ Q4_0
# The formats are each engine's nearest equivalent, not identical: Q8_0/Q4_0
# store one f16 scale per 32 weights (8.5 / 4.5 bits per weight), MLX one bf16
# scale and bias per 64 (8.5 / 4.5 bits too). About 10-15 minutes with the
# defaults on 2 cores; installs node-llama-cpp from bench/package.json on first use.
#
# llama.cpp's x86-64 build is one library per CPU level, and ggml loads the
# best one this CPU runs. --llamacpp-cpu VARIANT (haswell: AVX2, FMA, F16C;
# alderlake: also AVX-VNNI; zen4, icelake, ...: AVX-512) makes it load that
# one, from a hard-linked copy of bench/node_modules holding no other, so on an
# AVX-512 machine llama.cpp can run the same level as hearth under
# HEARTH_SIMD (docs/architecture/kernels.md, "Kernels"), e.g. HEARTH_SIMD=avx2-novnni with
# --llamacpp-cpu haswell for an AVX2-only CPU's pair of kernels. The table's
# last lines say which features each engine ran with.
set -euo pipefail
cd "$(dirname "$0")/.."

hearth=build/hearth
threads=1,2
rounds=2
pairs=all
decode=128
keep=
llamacpp_cpu=
while [ $# -gt 0 ]; do
  case $1 in
    --hearth) hearth=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --decode) decode=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --llamacpp-cpu) llamacpp_cpu=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$pairs" = all ] && pairs=q3-bf16,q3-8,q3-4,l1b-4
[ -x "$hearth" ] || { echo "no hearth binary at $hearth (build it, or pass --hearth)" >&2; exit 1; }
# llama.cpp's package is large (~700 MB of prebuilt binaries) and only this
# benchmark needs it, so it has its own package.json under bench/.
if [ ! -d bench/node_modules/node-llama-cpp ]; then
  (cd bench && npm ci --no-audit --no-fund --loglevel=error) ||
    { echo "could not install node-llama-cpp (bench/package.json)" >&2; exit 1; }
fi

pair_args() {  # name -> "preset|hearth mkmodel options|gguf type|hearth label|llama.cpp label"
  case $1 in
    q3-bf16) echo "qwen3-0.6b|--dtype bf16|f16|bf16|F16" ;;
    q3-8) echo "qwen3-0.6b|--dtype bf16 --quant mlx8 --group-size 64|q8_0|MLX 8-bit g64|Q8_0" ;;
    q3-4) echo "qwen3-0.6b|--dtype bf16 --quant mlx4 --group-size 64|q4_0|MLX 4-bit g64|Q4_0" ;;
    l1b-4) echo "llama-3.2-1b|--dtype bf16 --quant mlx4 --group-size 64|q4_0|MLX 4-bit g64|Q4_0" ;;
    *) echo "unknown pair $1 (expected q3-bf16, q3-8, q3-4, l1b-4)" >&2; exit 2 ;;
  esac
}

run() {  # run OUT COMMAND...: stdout to OUT.json, stderr to OUT.log, shown on failure
  local out=$1; shift
  if ! "$@" >"$out.json" 2>"$out.log"; then
    echo "failed: $*" >&2; tail -n 20 "$out.log" >&2; exit 1
  fi
}

work=$(mktemp -d "${TMPDIR:-/tmp}/hearth-compare.XXXXXX")
results=${keep:-$work/results}
mkdir -p "$results"
trap 'rm -rf "$work"' EXIT

llamacpp_bench=bench/llamacpp_compare.mjs
if [ -n "$llamacpp_cpu" ]; then
  bins=node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
  if [ ! -f "bench/$bins/libggml-cpu-$llamacpp_cpu.so" ]; then
    echo "no llama.cpp CPU variant '$llamacpp_cpu'; there are:" \
      "$(cd "bench/$bins" && ls libggml-cpu-*.so | sed 's/^libggml-cpu-//; s/\.so$//' | tr '\n' ' ')" >&2
    exit 2
  fi
  # The script resolves node-llama-cpp next to itself, so it moves with the copy.
  mkdir "$work/llamacpp"
  cp -al bench/node_modules "$work/llamacpp/" 2>/dev/null || cp -a bench/node_modules "$work/llamacpp/"
  find "$work/llamacpp/$bins" -name 'libggml-cpu-*.so' ! -name "libggml-cpu-$llamacpp_cpu.so" -delete
  cp "$llamacpp_bench" "$work/llamacpp/"
  llamacpp_bench=$work/llamacpp/llamacpp_compare.mjs
fi
start=$(date +%s)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average before: $load_before" >&2

IFS=, read -ra pair_list <<<"$pairs"
IFS=, read -ra thread_list <<<"$threads"
for pair in "${pair_list[@]}"; do
  IFS='|' read -r preset mk gguf hlabel llabel <<<"$(pair_args "$pair")"
  dir=$work/$pair
  echo "== $pair: $preset, $hlabel vs $llabel: writing the checkpoints" >&2
  # shellcheck disable=SC2086  # $mk is a list of options
  "$hearth" mkmodel --preset "$preset" $mk --gguf "$gguf" --out "$dir" >&2
  for t in "${thread_list[@]}"; do
    for r in $(seq 1 "$rounds"); do
      out=$results/$pair.t$t.r$r
      echo "== $pair, $t thread(s), round $r: hearth" >&2
      run "$out.hearth" "$hearth" bench --model "$dir" --threads "$t" --repeats 1 --decode "$decode" --json
      echo "== $pair, $t thread(s), round $r: llama.cpp" >&2
      run "$out.llamacpp" node "$llamacpp_bench" --model "$dir/model.gguf" --threads "$t" \
        --repeats 1 --decode "$decode"
    done
  done
  rm -rf "$dir"
done
elapsed=$(( $(date +%s) - start ))

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
node - "$results" "$pairs" "$threads" "$elapsed" "$load_before" "$load_after" <<'EOF'
const fs = require('fs');
const [dir, pairs, threads, elapsed, loadBefore, loadAfter] = process.argv.slice(2);
const labels = {
  'q3-bf16': ['qwen3-0.6b', 'bf16', 'F16'], 'q3-8': ['qwen3-0.6b', 'MLX 8-bit g64', 'Q8_0'],
  'q3-4': ['qwen3-0.6b', 'MLX 4-bit g64', 'Q4_0'], 'l1b-4': ['llama-3.2-1b', 'MLX 4-bit g64', 'Q4_0'],
};
const runs = (pair, t, engine) => fs.readdirSync(dir)
  .filter((f) => f.startsWith(`${pair}.t${t}.`) && f.endsWith(`.${engine}.json`))
  .map((f) => JSON.parse(fs.readFileSync(`${dir}/${f}`, 'utf8')));
const metrics = (run) => {
  const m = {};
  for (const p of run.prefill) m[`prefill ${p.tokens}`] = p.tokens_per_second;
  m[`decode ${run.decode.tokens}`] = run.decode.tokens_per_second;
  return m;
};
const best = (list) => {
  const out = {};
  for (const m of list.map(metrics)) for (const [k, v] of Object.entries(m)) out[k] = Math.max(out[k] ?? 0, v);
  return out;
};
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[(s.length - 1) >> 1] : NaN; };
const rows = [];
const bw = {};
let info = null;
for (const pair of pairs.split(',')) {
  for (const t of threads.split(',')) {
    const h = runs(pair, t, 'hearth'), l = runs(pair, t, 'llamacpp');
    if (!h.length || !l.length) continue;
    info ??= { cpu: h[0].cpu, simd: h[0].simd_target, int8: h[0].int8_target, llama: l[0].node_llama_cpp,
               fa: l[0].flash_attention, llamaCpu: l[0].cpu };
    (bw[t] ??= []).push(...h.map((r) => r.memory_read_bandwidth_gbps));
    const hb = best(h), lb = best(l);
    const [model, hf, lf] = labels[pair];
    for (const k of Object.keys(hb)) {
      rows.push([model, `${hf} / ${lf}`, t, k, hb[k].toFixed(1), (lb[k] ?? NaN).toFixed(1),
                 (hb[k] / lb[k]).toFixed(2)]);
    }
  }
}
const head = ['model', 'hearth / llama.cpp format', 'threads', 'test', 'hearth tok/s', 'llama.cpp tok/s', 'hearth / llama.cpp'];
console.log(`| ${head.join(' | ')} |`);
console.log(`|${head.map((_, i) => (i >= 4 ? '---:' : '---')).join('|')}|`);
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
console.log('');
for (const [t, v] of Object.entries(bw))
  console.log(`memory read bandwidth (hearth bench, median of ${v.length} runs), ${t} thread(s): ${median(v).toFixed(1)} GB/s`);
if (info) {
  console.log(`hearth: ${info.cpu}, SIMD target ${info.simd}, int8 kernels ${info.int8}`);
  console.log(`llama.cpp: node-llama-cpp ${info.llama}, flash attention ${info.fa}, ${info.llamaCpu}`);
}
console.log(`${new Date().toISOString().slice(0, 10)}: ${Math.round(elapsed / 60)} min, best of the rounds per engine; ` +
            `load average ${loadBefore} before, ${loadAfter} after (${require('os').cpus().length} CPUs)`);
EOF
[ -n "$keep" ] && echo "per-run JSON in $keep" >&2
exit 0
