// A transcription-only server, `hearth serve --model <Whisper checkpoint>`:
// speech to text through the official `openai` client, the model in
// /v1/models, /health, /stats, /metrics and the admin routes working, and
// every chat and text route answering 503 model_unavailable in its
// protocol's shape (once: the SDKs are told not to retry). Then the Whisper
// model listed beside a chat model. The checkpoints are random-weight
// Whisper tiny ones written by `hearth mkmodel`, as in audio.test.mjs.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Ollama } from 'ollama';
import { startServer, run, HEARTH, postRaw, getJSON, expectErrorShape } from './lib.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const shared = path.resolve(root, '../shared/audio');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-whisper-only-'));
const whisper = path.join(tmp, 'whisper-tiny');
const whisperMlx = path.join(tmp, 'whisper-mlx');
const jfkWav = fs.readFileSync(path.join(shared, 'jfk.wav'));
const FAST = { temperature: 0.2 };  // one temperature: a random model would climb the whole fallback ladder

before(async () => {
  const tokenizer = path.join(shared, 'multilingual.tiktoken');
  await run(HEARTH, ['mkmodel', '--arch', 'whisper', '--preset', 'tiny', '--tokenizer', tokenizer, '--out', whisper]);
  await run(HEARTH, ['mkmodel', '--arch', 'whisper', '--preset', 'tiny', '--layout', 'mlx', '--tokenizer', tokenizer,
    '--out', whisperMlx]);
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// The 503 every chat and text route answers, in OpenAI's shape.
function unavailable(body) {
  expectErrorShape(assert, body, 503);
  assert.equal(body.error.code, 'model_unavailable', JSON.stringify(body));
  assert.match(body.error.message, /only speech to text/);
  assert.match(body.error.message, /'whisper-tiny'/);
}

describe('hearth serve --model <whisper>', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--model', whisper + '/', '--whisper-idle-unload', '0', '--threads', '2']);
    client = srv.client();
  });
  after(async () => { await srv.stop(); });

  test('the start-up line says transcription only and names the model', () => {
    assert.match(srv.stdout(), /listening on http:\S+ \(transcription only: Whisper model whisper-tiny, 2 threads\)/);
  });

  test('transcriptions.create through the SDK: the text `hearth transcribe` gives', async () => {
    const r = await client.audio.transcriptions.create({
      file: await toFile(jfkWav, 'jfk.wav'), model: 'whisper-1', language: 'en', ...FAST,
    });
    assert.equal(typeof r.text, 'string');
    assert.equal(r.hearth.model, 'whisper-tiny');
    const { stdout } = await run(HEARTH, ['transcribe', path.join(shared, 'jfk.wav'), '--model', whisper,
      '--language', 'en', '--temperature', '0.2', '--format', 'json']);
    assert.equal(r.text, JSON.parse(stdout).text);
  });

  test('/v1/models lists the Whisper model (OpenAI and Anthropic shapes)', async () => {
    const models = [];
    for await (const m of client.models.list()) models.push(m);
    assert.equal(models.length, 1);
    const [m] = models;
    assert.equal(m.id, 'whisper-tiny');
    assert.equal(m.object, 'model');
    assert.equal(typeof m.created, 'number');
    assert.equal(m.owned_by, 'hearth');
    assert.equal(m.architecture, 'whisper');
    assert.equal(m.context_length, 448);
    assert.equal(m.transcription, true);
    assert.deepEqual(await client.models.retrieve('whisper-tiny'), m);
    await assert.rejects(client.models.retrieve('stories260k'), (e) => {
      assert.equal(e.status, 404);
      assert.equal(e.code, 'model_not_found');
      assert.match(e.message, /serves 'whisper-tiny'/);
      return true;
    });
    const anthropic = new Anthropic({ baseURL: srv.url, apiKey: 'none', maxRetries: 0 });
    const listed = [];
    for await (const a of anthropic.models.list()) listed.push(a);
    assert.deepEqual(listed.map((a) => [a.type, a.id]), [['model', 'whisper-tiny']]);
    assert.ok(!Number.isNaN(Date.parse(listed[0].created_at)));
  });

  test('/health, /v1, /stats and /metrics answer', async () => {
    const health = await getJSON(srv.url + '/health');
    assert.equal(health.status, 200);
    assert.equal(health.body.status, 'ok');
    assert.equal(health.body.model, 'whisper-tiny');
    assert.equal(health.body.queued, 0);
    assert.equal(health.body.running, 0);
    assert.equal(health.body.transcription.model, 'whisper-tiny');
    assert.equal((await getJSON(srv.url + '/v1')).body.model, 'whisper-tiny');
    const stats = (await getJSON(srv.url + '/stats')).body;
    assert.equal(stats.server.port, srv.port);
    assert.deepEqual(stats.model, { id: 'whisper-tiny', path: fs.realpathSync(whisper), architecture: 'whisper', context_length: 448 });
    assert.ok(stats.memory.rss_bytes > 0);
    assert.equal(stats.transcription.model, 'whisper-tiny');
    assert.ok(stats.transcription.requests >= 1);
    for (const k of ['queue', 'admission', 'prompt_cache', 'generation']) assert.ok(!(k in stats), `no ${k} block`);
    const metrics = await fetch(srv.url + '/metrics');
    assert.equal(metrics.status, 200);
    const text = await metrics.text();
    assert.match(text, /^hearth_process_resident_memory_bytes \d+$/m);
    assert.match(text, /^hearth_http_requests_total\{route="\/v1\/audio\/transcriptions",status="200"\} \d+$/m);
    assert.doesNotMatch(text, /hearth_queue_waiting/);
  });

  test('chat, completions, embeddings, responses: 503 model_unavailable, not retried by the SDK', async () => {
    const retrying = srv.client({ maxRetries: 2 });
    const calls = [
      () => retrying.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }),
      () => retrying.completions.create({ model: 'x', prompt: 'hi' }),
      () => retrying.embeddings.create({ model: 'x', input: 'hi' }),
      () => retrying.responses.create({ model: 'x', input: 'hi' }),
    ];
    for (const call of calls)
      await assert.rejects(call(), (e) => {
        assert.ok(e instanceof OpenAI.APIError, e.constructor.name);
        assert.equal(e.status, 503);
        assert.equal(e.code, 'model_unavailable');
        assert.equal(e.type, 'server_error');
        return true;
      });
    const metrics = await (await fetch(srv.url + '/metrics')).text();
    assert.match(metrics, /^hearth_http_requests_total\{route="\/v1\/chat\/completions",status="503"\} 1$/m,
      'one request: no retries');
    for (const p of ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses']) {
      const r = await postRaw(srv.url + p, '{}');
      assert.equal(r.status, 503, p);
      assert.equal(r.headers.get('x-should-retry'), 'false');
      unavailable(r.body);
    }
    for (const method of ['GET', 'DELETE']) {
      const r = await getJSON(srv.url + '/v1/responses/resp_1', { method });
      assert.equal(r.status, 503, method);
      unavailable(r.body);
    }
  });

  test("Anthropic's and Ollama's routes: 503 in their shapes", async () => {
    const anthropic = new Anthropic({ baseURL: srv.url, apiKey: 'none' });  // default retries: told not to
    await assert.rejects(
      anthropic.messages.create({ model: 'x', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
      (e) => {
        assert.equal(e.status, 503);
        assert.equal(e.error.type, 'error');
        assert.equal(e.error.error.type, 'api_error');
        assert.match(e.error.error.message, /only speech to text/);
        return true;
      });
    const count = await postRaw(srv.url + '/v1/messages/count_tokens', '{}');
    assert.equal(count.status, 503);
    assert.equal(count.body.type, 'error');
    assert.match(count.body.error.message, /only speech to text/);
    const ollama = new Ollama({ host: srv.url });
    for (const call of [() => ollama.chat({ model: 'x', messages: [{ role: 'user', content: 'hi' }], stream: false }),
      () => ollama.generate({ model: 'x', prompt: 'hi', stream: false }), () => ollama.embed({ model: 'x', input: 'hi' }),
      () => ollama.list(), () => ollama.ps(), () => ollama.show({ model: 'x' })])
      await assert.rejects(call(), (e) => {
        assert.equal(e.status_code, 503);
        assert.match(e.error, /only speech to text/);
        return true;
      });
    const raw = await postRaw(srv.url + '/api/chat', '{}');
    assert.equal(raw.status, 503);
    assert.deepEqual(Object.keys(raw.body), ['error']);
    assert.equal(typeof raw.body.error, 'string');
    assert.equal((await getJSON(srv.url + '/api/version')).status, 200);
  });

  test('admin routes: unload works; the prompt cache has nothing to close or flush', async () => {
    const unloaded = await postRaw(srv.url + '/admin/transcription/unload', '{}');
    assert.equal(unloaded.status, 200);
    assert.equal(unloaded.body.unloaded, true);
    assert.equal(unloaded.body.model, 'whisper-tiny');
    const closed = await postRaw(srv.url + '/admin/cache/session/close', '{"session_id": "s1"}');
    assert.deepEqual([closed.status, closed.body], [200, { closed: false }]);
    const flushed = await postRaw(srv.url + '/admin/cache/flush', '{}');
    assert.deepEqual([flushed.status, flushed.body], [200, { flushed: false }]);
  });

  test('the page at / is served', async () => {
    const r = await fetch(srv.url + '/');
    assert.equal(r.status, 200);
    assert.match(await r.text(), /<html/i);
  });

  test('SIGTERM: the server exits 0', async () => {
    const r = await srv.stop('SIGTERM');
    assert.equal(r.code, 0, srv.stderr());
    assert.match(srv.stderr(), /hearth serve: stopped/);
  });
});

describe('other Whisper servers', () => {
  test('an MLX-layout checkpoint is recognised as --model too', async () => {
    const srv = await startServer(['--model', whisperMlx]);
    try {
      assert.match(srv.stdout(), /transcription only: Whisper model whisper-mlx/);
      const r = await srv.client().audio.transcriptions.create({
        file: await toFile(jfkWav, 'jfk.wav'), model: 'whisper-1', language: 'en', ...FAST,
      });
      assert.equal(r.hearth.model, 'whisper-mlx');
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
  });

  test('beside a chat model: /v1/models lists both, the chat model first', async () => {
    const srv = await startServer(['--whisper-model', whisper]);
    try {
      const client = srv.client();
      const models = [];
      for await (const m of client.models.list()) models.push(m);
      assert.deepEqual(models.map((m) => [m.id, m.architecture]),
        [['stories260k', 'LlamaForCausalLM'], ['whisper-tiny', 'whisper']]);
      assert.equal((await client.models.retrieve('whisper-tiny')).transcription, true);
      await assert.rejects(client.models.retrieve('nope'), (e) => {
        assert.match(e.message, /serves 'stories260k' and 'whisper-tiny'/);
        return true;
      });
      const chat = await client.chat.completions.create({ model: 'stories260k', max_tokens: 4,
        messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(chat.object, 'chat.completion');
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
  });
});
