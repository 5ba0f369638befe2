// The prompt cache through the server: a follow-up turn reuses the
// conversation (cached_tokens) and answers exactly as a server without the
// cache, on several architectures, f32 and quantized; session ids and their
// precedence; closing a session; the SSD tier across a restart, kill -9 in
// the middle of writes, files damaged by hand, and a second server on the
// same directory.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HEARTH, run, startServer, postRaw, stats, waitForStats, sleep, kvReturned, expectErrorShape } from './lib.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-cache-test-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

const STORY = 'Once upon a time there was a little girl named Lily. She loved to play outside in the park with her ' +
  'friends and her big brown dog. One day she saw a big red ball under a tall tree and she wanted to play with it.';

async function complete(srv, body, headers = {}) {
  const r = await postRaw(srv.url + '/v1/completions', JSON.stringify({ temperature: 0, max_tokens: 24, ...body }),
    { 'Content-Type': 'application/json', ...headers });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

async function chat(srv, messages, extra = {}, headers = {}) {
  const r = await postRaw(srv.url + '/v1/chat/completions',
    JSON.stringify({ temperature: 0, max_tokens: 40, logprobs: true, messages, ...extra }),
    { 'Content-Type': 'application/json', ...headers });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

function sameLogprobs(a, b) {
  const x = a.choices[0].logprobs.content, y = b.choices[0].logprobs.content;
  assert.equal(x.length, y.length);
  for (let i = 0; i < x.length; ++i) {
    assert.equal(x[i].token, y[i].token);
    assert.ok(Math.abs(x[i].logprob - y[i].logprob) < 1e-3, `token ${i}: ${x[i].logprob} vs ${y[i].logprob}`);
  }
}

// Two turns of one conversation on a cached server, the second compared
// with a server that has no cache.
async function twoTurns(cached, cold, session) {
  const turn1 = [{ role: 'system', content: 'You tell short stories.' }, { role: 'user', content: STORY }];
  const r1 = await chat(cached, turn1, { session_id: session });
  const turn2 = [...turn1, { role: 'assistant', content: r1.choices[0].message.content },
    { role: 'user', content: 'What happened next?' }];
  const r2 = await chat(cached, turn2, { session_id: session });
  // The cold server answers turn 1 too, so it knows the reply's ids as well.
  assert.equal((await chat(cold, turn1)).choices[0].message.content, r1.choices[0].message.content);
  const want = await chat(cold, turn2);
  assert.equal(want.usage.prompt_tokens, r2.usage.prompt_tokens);
  assert.equal(want.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(r2.choices[0].message.content, want.choices[0].message.content);
  sameLogprobs(r2, want);
  return { r1, r2 };
}

describe('RAM tier', () => {
  let srv, cold;
  before(async () => {
    [srv, cold] = await Promise.all([startServer(), startServer(['--prompt-cache', '0'])]);
  });
  after(async () => { await Promise.all([srv?.stop(), cold?.stop()]); });

  test('a follow-up turn reuses the conversation and answers as a server without the cache', async () => {
    const { r1, r2 } = await twoTurns(srv, cold, 'conversation-1');
    assert.equal(r1.usage.prompt_tokens_details.cached_tokens, 0);
    const cachedTokens = r2.usage.prompt_tokens_details.cached_tokens;
    // Whole blocks of 32 up to the end of the first reply.
    assert.ok(cachedTokens >= r1.usage.prompt_tokens, `${cachedTokens} of ${r2.usage.prompt_tokens}`);
    assert.equal(cachedTokens % 32, 0);
    const s = await stats(srv);
    assert.ok(s.prompt_cache.enabled);
    assert.ok(s.prompt_cache.hits >= 1);
    assert.ok(s.prompt_cache.entries > 0);
    assert.equal(s.prompt_cache.session_hits, 1);
    assert.equal(s.generation.cached_tokens_total, cachedTokens);
    assert.equal(s.admission.enforced_context_tokens, 512);
    assert.ok(s.admission.memory_budget_bytes > 0);
    const m = await (await fetch(srv.url + '/metrics')).text();
    assert.match(m, /hearth_prompt_cache_hits_total [1-9]/);
    assert.match(m, /hearth_cached_tokens_total [1-9]/);
    assert.equal((await stats(cold)).prompt_cache.enabled, false);
  });

  test('a sampled reply sent back is tokenized to the ids it was generated as, so the next turn hits all of it', async () => {
    // At a high temperature the model spells words in pieces that re-tokenizing
    // its text would merge: the cacheless server (no history) counts other ids.
    // Which seed does that depends on the CPU's rounding: try seeds until one does.
    const turn1 = [{ role: 'user', content: 'Tell me a story about a dog named Max who liked to run in the park every day.' }];
    let r1, r2;
    for (let seed = 0; ; ++seed) {
      assert.ok(seed < 16, 'some seed gives a reply that re-tokenizes to other ids');
      r1 = await chat(srv, turn1, { temperature: 1.8, top_k: 0, seed, max_tokens: 60, logprobs: false });
      const turn2 = [...turn1, { role: 'assistant', content: r1.choices[0].message.content }, { role: 'user', content: 'And then?' }];
      r2 = await chat(srv, turn2, { max_tokens: 1, logprobs: false });
      const retokenized = await chat(cold, turn2, { max_tokens: 1, logprobs: false });
      if (r2.usage.prompt_tokens !== retokenized.usage.prompt_tokens) break;
    }
    const computed = r1.usage.prompt_tokens + r1.usage.completion_tokens - 1;  // the last sampled token is never fed
    assert.equal(r2.usage.prompt_tokens_details.cached_tokens, Math.floor(computed / 32) * 32);
  });

  test('streamed usage reports the cached tokens too', async () => {
    const prompt = STORY + ' Her mom said';
    await complete(srv, { prompt });
    const r = await fetch(srv.url + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt, max_tokens: 8, temperature: 0, stream: true, stream_options: { include_usage: true } }),
    });
    const text = await r.text();
    const usage = text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)))
      .filter((c) => c.usage).at(-1).usage;
    assert.ok(usage.prompt_tokens_details.cached_tokens >= 32, JSON.stringify(usage));
  });

  test('session ids: body session_id, then prompt_cache_key, then x-session-affinity, then the session_id header', async () => {
    // One generated token: the session's checkpoint (its last whole block) lies inside the prompt.
    const prompt = STORY + ' The end of part one.';
    const more = prompt + ' And then the sun came out and everybody played in the garden until dinner.';
    const hits = async () => (await stats(srv)).prompt_cache.session_hits;
    await complete(srv, { prompt, session_id: 'alpha', max_tokens: 1 });
    let n = await hits();
    // Each time the winning id is 'alpha' (known: a hit), the losing one unknown.
    for (const [body, headers] of [
      [{ session_id: 'alpha', prompt_cache_key: 'beta' }, { 'x-session-affinity': 'gamma', session_id: 'delta' }],
      [{ prompt_cache_key: 'alpha' }, { 'x-session-affinity': 'gamma', session_id: 'delta' }],
      [{}, { 'x-session-affinity': 'alpha', session_id: 'delta' }],
      [{}, { session_id: 'alpha' }],
    ]) {
      await complete(srv, { prompt: more, max_tokens: 1, ...body }, headers);
      assert.equal(await hits(), n + 1, JSON.stringify({ body, headers }));
      n += 1;
    }
    // An edited history under the same session is a session miss, served by prefix search.
    const misses = (await stats(srv)).prompt_cache.session_misses;
    await complete(srv, { prompt: 'A different story begins here. ' + more, session_id: 'alpha', max_tokens: 1 });
    assert.equal((await stats(srv)).prompt_cache.session_misses, misses + 1);
  });

  test('bad session ids are 400s naming the field', async () => {
    for (const [body, headers, param] of [
      [{ session_id: 7 }, {}, 'session_id'],
      [{ prompt_cache_key: '' }, {}, 'prompt_cache_key'],
      [{ session_id: 'x'.repeat(257) }, {}, 'session_id'],
      [{}, { 'x-session-affinity': 'y'.repeat(300) }, 'x-session-affinity'],
    ]) {
      const r = await postRaw(srv.url + '/v1/completions', JSON.stringify({ prompt: 'Hi', max_tokens: 1, ...body }),
        { 'Content-Type': 'application/json', ...headers });
      assert.equal(r.status, 400);
      expectErrorShape(assert, r.body);
      assert.equal(r.body.error.param, param);
    }
  });

  test('POST /admin/cache/session/close drops the session, not the blocks', async () => {
    const prompt = STORY + ' A session to close.';
    await complete(srv, { prompt, session_id: 'closing' });
    const before = await stats(srv);
    let r = await postRaw(srv.url + '/admin/cache/session/close', JSON.stringify({ session_id: 'closing' }));
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { closed: true });
    r = await postRaw(srv.url + '/admin/cache/session/close', '{}');
    assert.deepEqual(r.body, { closed: false });
    r = await postRaw(srv.url + '/admin/cache/session/close', JSON.stringify({ session_id: 5 }));
    assert.equal(r.status, 400);
    const after = await stats(srv);
    assert.equal(after.prompt_cache.sessions, before.prompt_cache.sessions - 1);
    // The blocks are still there: the same prompt hits, and counts no session hit.
    const again = await complete(srv, { prompt, session_id: 'closing' });
    assert.ok(again.usage.prompt_tokens_details.cached_tokens >= 32);
    assert.equal((await stats(srv)).prompt_cache.session_hits, after.prompt_cache.session_hits);
    r = await postRaw(srv.url + '/admin/cache/flush', '{}');
    assert.deepEqual(r.body, { flushed: false });  // no SSD tier
    assert.ok(kvReturned(await waitForStats(srv, kvReturned)));
  });
});

test('a stream dropped mid-generation, sent again, resumes and gives the text of an uninterrupted run', async () => {
  const [srv, cold] = await Promise.all([startServer(), startServer(['--prompt-cache', '0'])]);
  try {
    for (const sampling of [{ temperature: 0 }, { temperature: 0.9, seed: 42 }]) {
      // Far more tokens than the server can generate before it notices the
      // dropped connection (it does not wait for its reader); both of
      // stories260k's stop ids (</s>, <s>) banned.
      const body = { prompt: STORY, max_tokens: 430, logit_bias: { 1: -100, 2: -100 }, stream: true, ...sampling };
      const want = await complete(cold, { ...body, stream: false });
      // Read a part of the stream, then drop the connection. The server does
      // not wait for its reader: a client held up until the generation ended
      // leaves nothing to resume, and drops another.
      let saved;
      for (let attempt = 0; attempt < 5 && !(saved?.generation.checkpoints > 0); attempt++) {
        const ctrl = new AbortController();
        const r = await fetch(srv.url + '/v1/completions', {
          method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: ctrl.signal, body: JSON.stringify(body),
        });
        const reader = r.body.getReader();
        let seen = '';
        while ((seen.match(/data: \{/g) ?? []).length < 40) seen += new TextDecoder().decode((await reader.read()).value);
        ctrl.abort();
        // The engine saves a cancelled request's checkpoint before it stops
        // counting it as running.
        saved = await waitForStats(srv, (s) => s.generation.checkpoints > 0 ||
          (s.server.requests_in_flight === 0 && s.queue.running === 0));
      }
      assert.equal(saved.generation.checkpoints, 1, JSON.stringify(sampling));
      const again = await complete(srv, { ...body, stream: false });
      assert.equal(again.choices[0].text, want.choices[0].text, JSON.stringify(sampling));
      assert.equal(again.usage.completion_tokens, 430);  // the prompt is 73 tokens of the 512-token context
      const after = await stats(srv);
      assert.equal(after.generation.checkpoints, 0);
      assert.ok(after.generation.checkpoints_resumed >= 1);
    }
  } finally {
    await Promise.all([srv.stop(), cold.stop()]);
  }
});

test('cache hits equal cold runs on generated qwen3 (MLX 4-bit) and llama (bf16) checkpoints', async () => {
  for (const [arch, extra] of [['qwen3', ['--quant', 'mlx4']], ['llama', ['--dtype', 'bf16']]]) {
    const dir = path.join(tmp, `model-${arch}`);
    await run(HEARTH, ['mkmodel', '--arch', arch, '--out', dir, ...extra]);
    const [srv, cold] = await Promise.all([startServer(['--model', dir]), startServer(['--model', dir, '--prompt-cache', '0'])]);
    try {
      const { r2 } = await twoTurns(srv, cold, `arch-${arch}`);
      assert.ok(r2.usage.prompt_tokens_details.cached_tokens > 0, arch);
    } finally {
      await Promise.all([srv.stop(), cold.stop()]);
    }
  }
});

describe('SSD tier', () => {
  const dir = path.join(tmp, 'ssd');
  const prompts = Array.from({ length: 6 }, (_, i) => `Story ${i}. ` + STORY + ` Part ${i} of the tale goes on and on.`);
  let want;
  before(async () => {
    const cold = await startServer(['--prompt-cache', '0']);
    want = await Promise.all(prompts.map((prompt) => complete(cold, { prompt })));
    await cold.stop();
  });

  test('a restarted server finds the prefix on disk and answers the same', async () => {
    let srv = await startServer(['--ssd-cache', dir]);
    const first = await complete(srv, { prompt: prompts[0] });
    assert.equal(first.choices[0].text, want[0].choices[0].text);
    const f = await postRaw(srv.url + '/admin/cache/flush', '{}');
    assert.equal(f.body.flushed, true);
    assert.equal(typeof f.body.elapsed_ms, 'number');
    const s = (await stats(srv)).ssd_cache;
    assert.equal(s.dir, dir);
    assert.ok(s.entries >= 2 && s.longest_durable_prefix_tokens >= 64, JSON.stringify(s));
    assert.equal((await srv.stop()).code, 0);

    srv = await startServer(['--ssd-cache', dir]);
    try {
      const again = await complete(srv, { prompt: prompts[0] });
      assert.ok(again.usage.prompt_tokens_details.cached_tokens >= 64, JSON.stringify(again.usage));
      assert.equal(again.choices[0].text, want[0].choices[0].text);
      const s2 = (await stats(srv)).ssd_cache;
      assert.ok(s2.restores >= 2 && s2.restore_ms_total > 0, JSON.stringify(s2));
    } finally {
      await srv.stop();
    }
  });

  test('a second server on the same directory refuses with a clear message', async () => {
    const srv = await startServer(['--ssd-cache', dir]);
    try {
      await assert.rejects(startServer(['--ssd-cache', dir]), /locked.*another hearth server/);
    } finally {
      await srv.stop();
    }
  });

  test('kill -9 in the middle of SSD writes, again and again: the server starts and answers correctly', async () => {
    const killDir = path.join(tmp, 'ssd-kill');
    for (let round = 0; round < 6; ++round) {
      const srv = await startServer(['--ssd-cache', killDir]);
      // Distinct long prompts keep the writer busy; kill while they run.
      const inflight = Array.from({ length: 8 }, (_, i) =>
        complete(srv, { prompt: `Round ${round} request ${i}. ` + STORY.repeat(3), max_tokens: 60 }).catch(() => null));
      await sleep(30 + 40 * round);
      srv.proc.kill('SIGKILL');
      await srv.exited;
      await Promise.all(inflight);
    }
    const srv = await startServer(['--ssd-cache', killDir]);
    try {
      for (let i = 0; i < 2; ++i) {
        const r = await complete(srv, { prompt: prompts[i] });
        assert.equal(r.choices[0].text, want[i].choices[0].text);
      }
      const s = (await stats(srv)).ssd_cache;
      assert.ok(s.entries > 0, 'blocks written before the kills are served');
      assert.equal(s.failed_spills, 0);
    } finally {
      await srv.stop();
    }
  });

  test('files flipped or truncated by hand are skipped, counted and removed', async () => {
    const hurtDir = path.join(tmp, 'ssd-hurt');
    let srv = await startServer(['--ssd-cache', hurtDir]);
    await complete(srv, { prompt: prompts[1] });
    await complete(srv, { prompt: prompts[2] });
    await postRaw(srv.url + '/admin/cache/flush', '{}');
    await srv.stop();
    const ns = fs.readdirSync(hurtDir).filter((n) => n !== 'LOCK');
    assert.equal(ns.length, 1);
    const files = fs.readdirSync(path.join(hurtDir, ns[0])).map((n) => path.join(hurtDir, ns[0], n));
    assert.ok(files.length >= 4);
    // Damage every record: truncate half of them, flip a payload byte in the rest.
    files.forEach((f, i) => {
      if (i % 2 === 0) fs.truncateSync(f, fs.statSync(f).size - 10);
      else {
        const fd = fs.openSync(f, 'r+');
        const b = Buffer.alloc(1);
        const at = fs.statSync(f).size - 50;
        fs.readSync(fd, b, 0, 1, at);
        b[0] ^= 0xff;
        fs.writeSync(fd, b, 0, 1, at);
        fs.closeSync(fd);
      }
    });
    fs.writeFileSync(path.join(hurtDir, ns[0], 'deadbeef.kvb.tmp'), 'half-written');
    srv = await startServer(['--ssd-cache', hurtDir]);
    try {
      const truncated = Math.ceil(files.length / 2);
      assert.match(srv.stderr(), new RegExp(`${truncated + 1} bad files skipped and removed`));
      for (const i of [1, 2]) {
        const r = await complete(srv, { prompt: prompts[i] });
        assert.equal(r.choices[0].text, want[i].choices[0].text);
      }
      const s = (await stats(srv)).ssd_cache;
      assert.ok(s.skipped_files >= truncated + 1, JSON.stringify(s));  // and flipped ones when read
    } finally {
      await srv.stop();
    }
  });
});
