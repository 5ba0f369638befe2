// Many clients at once: streaming, non-streaming, cancelled mid-stream and
// garbage, against one server. Every well-formed request must get the same
// complete answer it gets alone; the queue limit must produce 429s and
// nothing else; memory must come back to its baseline.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, postRaw, rawRequest, getJSON, stats, waitForStats, sleep, kvReturned } from './lib.mjs';

const MODEL = 'stories260k';
const NO_EOS = { 1: -100, 2: -100 };
const PROMPTS = [
  'Once upon a time', 'The cat sat', 'Tom had a red ball', 'Lily went to the park', 'The sun was hot',
  'A little bird', 'One day, a dog', 'Sam and Mia', 'The big tree', 'Mom said', 'In the garden',
  'The boat was', 'Ben liked to', 'It was a rainy day', 'The king', 'Sue found a box',
];
const MAX_TOKENS = 48;

function request(i) {
  const prompt = PROMPTS[i % PROMPTS.length];
  return i % 2 === 0
    ? { kind: 'completion', body: { model: MODEL, prompt, max_tokens: MAX_TOKENS, temperature: 0 } }
    : { kind: 'chat', body: { model: MODEL, messages: [{ role: 'user', content: prompt }], max_tokens: MAX_TOKENS, temperature: 0 } };
}

async function answer(client, req, stream) {
  if (req.kind === 'completion') {
    if (!stream) {
      const r = await client.completions.create(req.body);
      return { text: r.choices[0].text, finish: r.choices[0].finish_reason, tokens: r.usage.completion_tokens };
    }
    let text = '', finish = null, tokens = null;
    for await (const c of await client.completions.create({ ...req.body, stream: true })) {
      text += c.choices[0]?.text ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
      if (c.usage) tokens = c.usage.completion_tokens;
    }
    return { text, finish, tokens };
  }
  if (!stream) {
    const r = await client.chat.completions.create(req.body);
    return { text: r.choices[0].message.content, finish: r.choices[0].finish_reason, tokens: r.usage.completion_tokens };
  }
  let text = '', finish = null, tokens = null;
  for await (const c of await client.chat.completions.create({ ...req.body, stream: true, stream_options: { include_usage: true } })) {
    text += c.choices[0]?.delta?.content ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
    if (c.usage) tokens = c.usage.completion_tokens;
  }
  return { text, finish, tokens };
}

// Streams a long generation and hangs up after the first few events.
async function cancelMidStream(srv, i) {
  const ctrl = new AbortController();
  const r = await fetch(srv.url + '/v1/chat/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: ctrl.signal,
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: PROMPTS[i % PROMPTS.length] }], stream: true, temperature: 1, logit_bias: NO_EOS }),
  });
  assert.equal(r.status, 200);
  const reader = r.body.getReader();
  await reader.read();
  await reader.read();
  ctrl.abort();
  return 'cancelled';
}

async function garbage(srv, i) {
  const url = srv.url + '/v1/chat/completions';
  switch (i % 6) {
    case 0: return (await postRaw(url, '{"messages": [')).status;
    case 1: return (await postRaw(url, Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]))).status;
    case 2: return (await postRaw(url, JSON.stringify({ messages: [{ role: 'user', content: 'x' }], temperature: 'x' }))).status;
    case 3: return (await postRaw(srv.url + '/v1/completions', JSON.stringify({ prompt: 'x', max_tokens: -3 }))).status;
    case 4: await rawRequest(srv.port, 'POST /v1/completions HTTP/1.1\r\nContent-Length: 500\r\n\r\n{"prompt":'); return 'raw';
    default: await rawRequest(srv.port, Buffer.from('\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03', 'latin1')); return 'raw';
  }
}

async function idleRss(srv) {
  // Let everything settle, then read RSS (the server trims its heap when idle).
  await waitForStats(srv, (s) => s.server.requests_in_flight === 0 && kvReturned(s));
  await sleep(300);
  const samples = [];
  for (let i = 0; i < 3; i++) { samples.push((await stats(srv)).memory.rss_bytes); await sleep(100); }
  return Math.min(...samples);
}

describe('concurrency', () => {
  test('32 clients: streaming, non-streaming, cancelled, garbage', async () => {
    // The prompt cache off: what it keeps (its blocks fill the KV pool's
    // huge pages as it grows toward its budget) is memory by design, not a
    // leak; prompt_cache.test.mjs covers it.
    const srv = await startServer(['--prompt-cache', '0']);
    try {
      const client = srv.client();
      // What each request answers alone.
      const expected = [];
      for (let i = 0; i < PROMPTS.length * 2; i++) expected.push(await answer(client, request(i), false));

      const storm = async () => {
        const jobs = [];
        for (let i = 0; i < 32; i++) {
          if (i < 10) jobs.push(answer(client, request(i), false).then((a) => ({ i, a })));
          else if (i < 20) jobs.push(answer(client, request(i), true).then((a) => ({ i, a })));
          else if (i < 26) jobs.push(cancelMidStream(srv, i).then((a) => ({ i, a })));
          else jobs.push(garbage(srv, i).then((a) => ({ i, a })));
        }
        return Promise.all(jobs);
      };

      await storm();  // warm-up: threads, arenas and the KV pool get touched
      const baseline = await idleRss(srv);
      const before = await stats(srv);

      for (let round = 0; round < 3; round++) {
        const results = await storm();
        for (const { i, a } of results) {
          if (i < 20) {
            const e = expected[i % expected.length];
            assert.equal(a.text, e.text, `request ${i} (${request(i).kind}, ${i < 10 ? 'whole' : 'stream'})`);
            assert.equal(a.finish, e.finish, `request ${i}`);
            assert.equal(a.tokens, e.tokens, `request ${i}`);
          } else if (i < 26) {
            assert.equal(a, 'cancelled');
          } else if (a !== 'raw') {
            assert.equal(a, 400, `garbage ${i}`);
          }
        }
      }

      const after = await waitForStats(srv, (s) => s.server.requests_in_flight === 0 &&
        kvReturned(s) && s.queue.queued === 0);
      assert.equal(after.server.requests_in_flight, 0);
      assert.equal(after.queue.queued, 0);
      assert.ok(kvReturned(after), 'every KV block is back');
      assert.ok(after.generation.engine_cancelled - before.generation.engine_cancelled >= 1,
        'cancelled streams were cancelled in the engine');
      assert.equal(after.generation.failed, 0);
      assert.equal((await getJSON(srv.url + '/health')).status, 200);

      const rss = await idleRss(srv);
      const slack = Math.max(4 << 20, baseline * 0.1);
      console.log(`# rss baseline ${(baseline / 2 ** 20).toFixed(1)} MiB, after 3 storms ${(rss / 2 ** 20).toFixed(1)} MiB`);
      // An AddressSanitizer build holds freed memory in quarantine; there the
      // leak checker at exit (the server must exit 0) stands in for RSS.
      if (!after.server.sanitized) {
        assert.ok(rss <= baseline + slack,
          `RSS back to baseline: ${(rss / 2 ** 20).toFixed(1)} MiB after vs ${(baseline / 2 ** 20).toFixed(1)} MiB before`);
      }
    } finally {
      assert.equal((await srv.stop()).code, 0, srv.stderr());
    }
  });

  test('a full queue answers 429 resource_admission/queue_full; nothing else breaks', async () => {
    const srv = await startServer(['--max-queue', '2', '--max-batch', '2']);
    try {
      const client = srv.client();
      const body = (i) => ({ model: MODEL, prompt: PROMPTS[i % PROMPTS.length], max_tokens: 150, temperature: 0, logit_bias: NO_EOS });
      const results = await Promise.all(Array.from({ length: 32 }, async (_, i) => {
        try {
          if (i % 2) {
            let text = '', tokens = 0;
            for await (const c of await client.completions.create({ ...body(i), stream: true })) {
              text += c.choices[0]?.text ?? '';
              if (c.usage) tokens = c.usage.completion_tokens;
            }
            return { ok: true, text, tokens, i };
          }
          const r = await client.completions.create(body(i));
          return { ok: true, text: r.choices[0].text, tokens: r.usage.completion_tokens, i };
        } catch (e) {
          return { ok: false, e, i };
        }
      }));
      const ok = results.filter((r) => r.ok), refused = results.filter((r) => !r.ok);
      assert.ok(refused.length > 0, 'some requests were refused');
      assert.ok(ok.length >= 4, `at least the running and queued ones succeed (${ok.length})`);
      for (const r of refused) {
        assert.ok(r.e instanceof OpenAI.RateLimitError, `${r.e.constructor.name}: ${r.e.message}`);
        assert.equal(r.e.status, 429);
        assert.equal(r.e.type, 'resource_admission');
        assert.equal(r.e.code, 'queue_full');
      }
      // The ones that got in are complete and equal to the same request alone.
      for (const r of ok) {
        assert.equal(r.tokens, 150);
        const alone = await client.completions.create(body(r.i));
        assert.equal(r.text, alone.choices[0].text, `request ${r.i}`);
      }
      const s = await waitForStats(srv, (x) => x.server.requests_in_flight === 0 && kvReturned(x));
      assert.equal(s.queue.rejected_total, refused.length);
      assert.ok(kvReturned(s), JSON.stringify(s.memory));
      const m = await (await fetch(srv.url + '/metrics')).text();
      assert.match(m, new RegExp(`^hearth_http_requests_total\\{route="/v1/completions",status="429"\\} ${refused.length}$`, 'm'));
    } finally {
      assert.equal((await srv.stop()).code, 0, srv.stderr());
    }
  });
});
