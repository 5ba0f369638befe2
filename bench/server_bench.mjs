#!/usr/bin/env node
// Server benchmark: time to first token and decode speed through HTTP
// (streaming /v1/completions), next to `hearth bench --json` in-process on the
// same model in the same run, so the HTTP/SSE/detokenizer overhead shows.
//
//   node bench/server_bench.mjs [--hearth build/hearth] [--model DIR] [--prompt 64]
//        [--decode 128] [--repeats 5] [--clients 1,8] [--threads N] [--json]
//        [--itl-streams 4] [--itl-prompt 1024] [--step-tokens N] [--step-seconds S]
//        [--kv-type f32|bf16]
//
// The prompt is random token ids (as `hearth bench` uses) sent as a token-id
// prompt; EOS is forbidden with logit_bias so every request decodes exactly
// --decode tokens. TTFT is from sending the request to the first SSE event
// carrying text; decode speed is (tokens - 1) / (last event - first event).
// With several clients, the aggregate rate is all clients' tokens over the
// wall time of the round (prefill included), and the aggregate decode rate
// the tokens all streams received while every one of them was decoding (from
// the last stream's first token to the first stream's last) over that
// window. Last, inter-token latency while others prefill:
// --itl-streams streams decode while requests with --itl-prompt-token
// prompts keep arriving (one at a time, back to back); the gaps between the
// streams' tokens are reported as p50/p99 (the engine's --step-tokens
// and --step-seconds budgets are what keep them flat).
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { args, opt, root } from './options.mjs';

const HEARTH = path.resolve(opt('hearth', path.join(root, 'build/hearth')));
const MODEL = opt('model', null);
const PROMPT = Number(opt('prompt', 64));
const DECODE = Number(opt('decode', 128));
const REPEATS = Number(opt('repeats', 5));
const CLIENTS = opt('clients', '1,8').split(',').map(Number);
const THREADS = opt('threads', null);
const JSON_OUT = args.includes('--json');
const ITL_STREAMS = Number(opt('itl-streams', 4));
const ITL_PROMPT = Number(opt('itl-prompt', 1024));
const STEP_TOKENS = opt('step-tokens', null);
const STEP_SECONDS = opt('step-seconds', null);
const KV_TYPE = opt('kv-type', null);
const log = (...a) => { if (!JSON_OUT) console.error(...a); };

const common = [...(MODEL ? ['--model', MODEL] : []), ...(THREADS ? ['--threads', THREADS] : []),
  ...(KV_TYPE ? ['--kv-type', KV_TYPE] : [])];

async function inProcess() {
  const { stdout } = await promisify(execFile)(HEARTH, ['bench', '--json', '--prefill', String(PROMPT), '--decode',
    String(DECODE), '--repeats', String(REPEATS), ...common], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout);
}

async function startServer() {
  const maxBatch = Math.max(...CLIENTS);
  const step = [...(STEP_TOKENS ? ['--step-tokens', STEP_TOKENS] : []),
    ...(STEP_SECONDS ? ['--step-seconds', STEP_SECONDS] : [])];
  const proc = spawn(HEARTH, ['serve', '--port', '0', '--max-batch', String(Math.max(maxBatch, ITL_STREAMS + 1)), ...step, ...common],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error('hearth serve exited ' + code)));
  });
  return { proc, url };
}

function randomPrompt(vocab, seed, length = PROMPT) {
  let x = seed >>> 0;
  const ids = [];
  for (let i = 0; i < length; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    ids.push(3 + (x % (vocab - 3)));
  }
  return ids;
}

async function streamOnce(url, prompt, eosBias, gaps = null, maxTokens = DECODE) {
  const t0 = performance.now();
  const r = await fetch(url + '/v1/completions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, stream: true, logit_bias: eosBias }),
  });
  if (!r.ok) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = '', first = 0, last = 0, tokens = 0;
  const times = [];  // of the events carrying text
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      if (j.usage) tokens = j.usage.completion_tokens;
      if (j.choices?.[0]?.text) {
        const now = performance.now();
        times.push(now);
        if (!first) first = now;
        else if (gaps) gaps.push(now - last);
        last = now;
      }
    }
  }
  return { ttft: (first - t0) / 1000, decodeSeconds: (last - first) / 1000, tokens, times, wall: (performance.now() - t0) / 1000 };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const best = (xs) => Math.min(...xs);
// Tokens per second of all streams together while all of them decode; null
// when there was no such time (a stream ended before the last one began).
function decodeWindowRate(runs) {
  const from = Math.max(...runs.map((x) => x.times[0])), to = Math.min(...runs.map((x) => x.times.at(-1)));
  if (to <= from) return null;
  const events = runs.reduce((n, x) => n + x.times.filter((t) => t > from && t <= to).length, 0);
  return events / ((to - from) / 1000);
}

log(`bench: in-process hearth bench (prefill ${PROMPT}, decode ${DECODE})`);
const local = await inProcess();
const { proc, url } = await startServer();
const result = { model: local.model, threads: local.threads, prompt_tokens: PROMPT, decode_tokens: DECODE, in_process: {}, http: [] };
try {
  const models = await (await fetch(url + '/v1/models')).json();
  const stats = await (await fetch(url + '/stats')).json();
  const vocab = stats.model.vocab_size;
  // Forbid the special ids 0..2 (unk, bos, eos in Llama-style vocabularies)
  // so every request decodes the full length; a request that still stops
  // early fails the run below.
  const eos = {};
  for (const id of [0, 1, 2]) eos[id] = -100;
  result.served_model = models.data[0].id;

  const prefill = local.prefill.find((p) => p.tokens === PROMPT) ?? local.prefill[0];
  result.in_process = {
    prefill_seconds: prefill.seconds,
    prefill_tokens_per_second: prefill.tokens_per_second,
    decode_tokens_per_second: local.decode.tokens_per_second,
  };

  await streamOnce(url, randomPrompt(vocab, 1), eos);  // warm-up
  for (const clients of CLIENTS) {
    log(`bench: HTTP streaming, ${clients} client(s), ${REPEATS} rounds`);
    const ttfts = [], rates = [], aggregates = [], decodeAggregates = [];
    for (let r = 0; r < REPEATS; r++) {
      const t0 = performance.now();
      const runs = await Promise.all(Array.from({ length: clients }, (_, c) => streamOnce(url, randomPrompt(vocab, 100 + r * 64 + c), eos)));
      const wall = (performance.now() - t0) / 1000;
      for (const x of runs) {
        if (x.tokens !== DECODE) throw new Error(`expected ${DECODE} tokens, got ${x.tokens}`);
        ttfts.push(x.ttft);
        rates.push((x.tokens - 1) / x.decodeSeconds);
      }
      aggregates.push(runs.reduce((s, x) => s + x.tokens, 0) / wall);
      const rate = decodeWindowRate(runs);
      if (rate !== null) decodeAggregates.push(rate);
    }
    if (decodeAggregates.length < REPEATS)
      log(`bench: ${clients} streams decoded all at once in ${decodeAggregates.length} of ${REPEATS} rounds ` +
          '(the aggregate decode rate is of those); a larger --decode gives them the time');
    result.http.push({
      clients,
      ttft_seconds_median: median(ttfts),
      ttft_seconds_best: best(ttfts),
      decode_tokens_per_second_median: median(rates),
      decode_tokens_per_second_best: Math.max(...rates),
      aggregate_tokens_per_second_median: median(aggregates),
      aggregate_decode_tokens_per_second_median: decodeAggregates.length ? median(decodeAggregates) : null,
    });
  }

  if (ITL_STREAMS > 0) {
    // The prefilling prompts must fit the served context (512 for the bundled model).
    const itlPrompt = Math.min(ITL_PROMPT, models.data[0].context_length - 1);
    log(`bench: inter-token latency of ${ITL_STREAMS} streams while ${itlPrompt}-token prompts prefill`);
    const gaps = [], alone = [];
    await streamOnce(url, randomPrompt(vocab, 7), eos, alone);  // the same stream with nothing else running
    let streaming = true, prefills = 0;
    const began = performance.now();
    const streams = Promise.all(Array.from({ length: ITL_STREAMS }, (_, c) => streamOnce(url, randomPrompt(vocab, 500 + c), eos, gaps)))
      .finally(() => { streaming = false; });
    const load = (async () => {
      while (streaming) {
        await streamOnce(url, randomPrompt(vocab, 900 + prefills, itlPrompt), eos, null, 1);
        ++prefills;
      }
    })();
    await Promise.all([streams, load]);  // a failure in either ends the run (and the server)
    const seconds = (performance.now() - began) / 1000;
    result.inter_token_latency = {
      streams: ITL_STREAMS, prefill_prompt_tokens: itlPrompt, prefills_during: prefills,
      alone_ms_p50: percentile(alone, 0.5), alone_ms_p99: percentile(alone, 0.99),
      ms_p50: percentile(gaps, 0.5), ms_p99: percentile(gaps, 0.99), ms_max: Math.max(...gaps),
      ms_mean: gaps.reduce((a, b) => a + b, 0) / gaps.length,
      prefill_tokens_per_second: (prefills * itlPrompt) / seconds,
    };
  }
} finally {
  proc.kill('SIGTERM');
}

if (JSON_OUT) {
  console.log(JSON.stringify(result, null, 2));
} else {
  const ms = (s) => (s * 1000).toFixed(2) + ' ms';
  const r = result.in_process;
  console.log(`model ${result.served_model}, ${result.threads} threads, prompt ${PROMPT} tokens, decode ${DECODE} tokens`);
  console.log(`in-process (hearth bench): prefill ${ms(r.prefill_seconds)} (${r.prefill_tokens_per_second.toFixed(0)} tok/s), decode ${r.decode_tokens_per_second.toFixed(0)} tok/s`);
  console.log('| clients | TTFT median | TTFT best | decode tok/s per stream (median) | aggregate tok/s | aggregate decode tok/s | aggregate decode / 1 client |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|');
  const single = result.http.find((h) => h.clients === 1)?.aggregate_decode_tokens_per_second_median;
  for (const h of result.http) {
    const d = h.aggregate_decode_tokens_per_second_median;
    console.log(`| ${h.clients} | ${ms(h.ttft_seconds_median)} | ${ms(h.ttft_seconds_best)} | ${h.decode_tokens_per_second_median.toFixed(0)} | ` +
      `${h.aggregate_tokens_per_second_median.toFixed(0)} | ${d === null ? '-' : d.toFixed(0)} | ${d !== null && single ? (d / single).toFixed(2) : '-'} |`);
  }
  const l = result.inter_token_latency;
  if (l)
    console.log(`inter-token latency, ${l.streams} streams while ${l.prefills_during} prompts of ${l.prefill_prompt_tokens} tokens prefilled: ` +
      `p50 ${l.ms_p50.toFixed(1)} ms, p99 ${l.ms_p99.toFixed(1)} ms, max ${l.ms_max.toFixed(1)} ms, ` +
      `mean ${l.ms_mean.toFixed(1)} ms; prefill ${l.prefill_tokens_per_second.toFixed(0)} tok/s ` +
      `(one stream alone: p50 ${l.alone_ms_p50.toFixed(1)} ms, p99 ${l.alone_ms_p99.toFixed(1)} ms)`);
}
