#!/usr/bin/env node
// llama.cpp's prefill and decode speed on a GGUF file, measured the way
// `hearth bench` measures hearth, so the two can be compared number for
// number (bench/compare.sh runs both on the same weights).
//
//   node bench/llamacpp_compare.mjs --model DIR/model.gguf [--threads N]
//        [--prefill 64,512] [--decode 128] [--repeats 3]
//
// llama.cpp comes from the npm package node-llama-cpp (prebuilt CPU
// binaries; ggml picks its CPU variant at run time). Prints one JSON object.
//
// What is timed, as in `hearth bench`:
// - prefill N: the same N random token ids (std::mt19937 seeded 1234, id =
//   draw % vocab: hearth's exact sequence) evaluated as one batch into an
//   empty sequence, with no logits requested; repeats + 1 runs, the first
//   (which pages the weights in) not counted; the best is reported.
// - decode: from the first of those tokens, greedy decoding of --decode
//   tokens; the rate is (tokens - 1) / (time of the last token - time of the
//   first), i.e. one decode step per token after the one the prefill gave.
//   EOS does not stop it. Best of --repeats.
// The low-level sequence API is used (evaluateWithoutGeneratingNewTokens,
// evaluate with temperature 0): no chat template, no detokenizing. Each
// decode step still goes through node-llama-cpp's JS batching loop and its
// native sampler (greedy over the full vocabulary), which adds a fixed cost
// per token: a 2-layer, 64-wide model decodes at ~4500 tok/s here, so all
// per-token overhead (llama.cpp's own graph building included) is under
// 0.25 ms, against 40+ ms per step for qwen3-0.6b. Sampling is part of
// hearth's decode step too.
// llama.cpp runs with its defaults otherwise: F16 KV cache, flash attention
// "auto" (on for CPU), weights mmapped and, where ggml has kernels for the
// type (AMX, AVX-512 repacking), copied into its own layout at load.
// LLAMACPP_BENCH_DEBUG=1 prints every timed run on stderr.
import path from 'node:path';
import { getLlama, getModuleVersion, LlamaLogLevel } from 'node-llama-cpp';
import { args, opt } from './options.mjs';

if (args.includes('--help') || !opt('model')) {
  console.error('usage: node bench/llamacpp_compare.mjs --model FILE.gguf [--threads N] ' +
                '[--prefill 64,512] [--decode 128] [--repeats 3]');
  process.exit(args.includes('--help') ? 0 : 2);
}
const MODEL = path.resolve(opt('model'));
const THREADS = Number(opt('threads', 0));  // 0: llama.cpp's default (all math cores)
const PREFILL = opt('prefill', '64,512').split(',').map(Number);
const DECODE = Number(opt('decode', 128));
const REPEATS = Number(opt('repeats', 3));
const progress = (what) => console.error('llama.cpp bench: ' + what);

// std::mt19937 (32-bit Mersenne Twister), the generator `hearth bench` draws
// its token ids from.
function mt19937(seed) {
  const mt = new Uint32Array(624);
  let index = 624;
  mt[0] = seed >>> 0;
  for (let i = 1; i < 624; i++) {
    const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
    mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
  }
  return () => {
    if (index >= 624) {
      for (let i = 0; i < 624; i++) {
        const y = (mt[i] & 0x80000000) | (mt[(i + 1) % 624] & 0x7fffffff);
        mt[i] = mt[(i + 397) % 624] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      index = 0;
    }
    let y = mt[index++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  };
}

const now = () => Number(process.hrtime.bigint()) / 1e9;

progress('loading the model');
const llama = await getLlama({ gpu: false, build: 'never', maxThreads: 0, logLevel: LlamaLogLevel.error,
                               progressLogs: false });
const model = await llama.loadModel({ modelPath: MODEL, gpuLayers: 0, useMmap: true });
const arch = model.fileInfo.metadata.general.architecture;
const embd = model.fileInfo.fullTensorInfo?.find((t) => t.name === 'token_embd.weight');
const nVocab = Number(model.fileInfo.metadata[arch]?.vocab_size ?? embd.dimensions[1]);
const maxPrompt = Math.max(1, ...PREFILL);
const context = await model.createContext({
  contextSize: Math.max(maxPrompt, DECODE + 1) + 64,
  batchSize: maxPrompt,
  sequences: 1,
  ...(THREADS > 0 ? { threads: THREADS } : {}),
});
const sequence = context.getSequence();

const rng = mt19937(1234);
const tokens = Array.from({ length: maxPrompt }, () => rng() % nVocab);

const prefill = [];
for (const n of PREFILL) {
  progress(`prefill ${n} tokens`);
  let best = Infinity;
  for (let r = 0; r < REPEATS + 1; r++) {
    await sequence.clearHistory();
    const t0 = now();
    await sequence.evaluateWithoutGeneratingNewTokens(tokens.slice(0, n));
    const s = now() - t0;
    if (r > 0) best = Math.min(best, s);
    if (process.env.LLAMACPP_BENCH_DEBUG) progress(`  run ${r}: ${s.toFixed(3)} s`);
  }
  prefill.push({ tokens: n, seconds: best, tokens_per_second: n / best });
}

progress('decode');
let bestDecode = 0;
let generated = 0;
for (let r = 0; r < REPEATS; r++) {
  await sequence.clearHistory();
  let count = 0;
  let first = 0;
  let last = 0;
  for await (const token of sequence.evaluate([tokens[0]], { temperature: 0, yieldEogToken: true })) {
    last = now();
    if (count++ === 0) first = last;
    if (count >= DECODE) break;
  }
  const tps = (count - 1) / (last - first);
  if (process.env.LLAMACPP_BENCH_DEBUG) progress(`  decode run ${r}: ${count} tokens, ${tps.toFixed(2)} tok/s`);
  if (tps > bestDecode) bestDecode = tps, generated = count;
}

const out = {
  engine: 'llama.cpp',
  node_llama_cpp: await getModuleVersion(),
  llama_cpp_release: llama.llamaCppRelease?.release ?? null,
  model: MODEL,
  architecture: arch,
  file_bytes: model.size,
  vocab_size: nVocab,
  threads: context.idealThreads,
  flash_attention: context.flashAttention,
  context_size: context.contextSize,
  batch_size: context.batchSize,
  cpu: llama.systemInfo.trim(),
  prefill,
  decode: { tokens: generated, tokens_per_second: bestDecode },
};
console.log(JSON.stringify(out, null, 2));
await context.dispose();
await model.dispose();
await llama.dispose();
