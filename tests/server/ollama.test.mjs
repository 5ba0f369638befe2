// Ollama's API end to end through the official `ollama` npm client.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import { startServer, postRaw } from './lib.mjs';

const MODEL = 'stories260k';

describe('Ollama API', () => {
  let srv, ollama;
  before(async () => {
    srv = await startServer();
    ollama = new Ollama({ host: srv.url });
  });
  after(async () => { await srv.stop(); });

  test('chat (stream: false): the same text and counts as chat completions', async () => {
    const messages = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Once upon a time' }];
    const r = await ollama.chat({ model: MODEL, messages, stream: false, options: { temperature: 0, num_predict: 20 } });
    assert.equal(r.model, MODEL);
    assert.equal(r.done, true);
    assert.equal(r.message.role, 'assistant');
    const chat = await srv.client().chat.completions.create({ model: MODEL, messages, max_tokens: 20, temperature: 0 });
    assert.equal(r.message.content, chat.choices[0].message.content);
    assert.equal(r.done_reason, chat.choices[0].finish_reason === 'length' ? 'length' : 'stop');
    assert.equal(r.prompt_eval_count, chat.usage.prompt_tokens);
    assert.equal(r.eval_count, chat.usage.completion_tokens);
    assert.ok(r.total_duration > 0);
    assert.ok(!Number.isNaN(Date.parse(r.created_at)));
  });

  test('chat streaming: NDJSON pieces add up to the whole answer; the last one is done', async () => {
    const params = { model: MODEL, messages: [{ role: 'user', content: 'Hello' }], options: { temperature: 0, num_predict: 16 } };
    const whole = await ollama.chat({ ...params, stream: false });
    let text = '', last;
    for await (const part of await ollama.chat({ ...params, stream: true })) {
      if (!part.done) text += part.message.content;
      last = part;
    }
    assert.equal(text, whole.message.content);
    assert.equal(last.done, true);
    assert.equal(last.eval_count, whole.eval_count);
    const raw = await fetch(srv.url + '/api/chat', { method: 'POST', body: JSON.stringify(params) });
    assert.match(raw.headers.get('content-type'), /application\/x-ndjson/);
    const lines = (await raw.text()).trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(lines.length > 2);
    assert.ok(lines.slice(0, -1).every((l) => l.done === false));
  });

  test('generate: templated by default, raw: true is the plain prompt; options map to the sampler', async () => {
    const g = await ollama.generate({ model: MODEL, prompt: 'Once upon a time', system: 'You tell stories.', stream: false, options: { temperature: 0, num_predict: 12 } });
    const chat = await srv.client().chat.completions.create({
      model: MODEL, max_tokens: 12, temperature: 0,
      messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Once upon a time' }],
    });
    assert.equal(g.response, chat.choices[0].message.content);
    const raw = await ollama.generate({ model: MODEL, prompt: 'Once upon a time', raw: true, stream: false, options: { temperature: 0, num_predict: 12, stop: ['.'] } });
    const completion = await srv.client().completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 12, temperature: 0, stop: ['.'] });
    assert.equal(raw.response, completion.choices[0].text);
    const seeded = (seed) => ollama.generate({ model: MODEL, prompt: 'Tom', raw: true, stream: false, options: { temperature: 1, seed, num_predict: 16 } });
    assert.equal((await seeded(7)).response, (await seeded(7)).response);
  });

  test('a model and no prompt or messages loads it (or unloads, keep_alive 0): nothing is generated', async () => {
    const before = (await (await fetch(srv.url + '/stats')).json()).generation;
    const g = await ollama.generate({ model: MODEL, prompt: '', stream: false });
    assert.equal(g.done, true);
    assert.equal(g.done_reason, 'load');
    assert.equal(g.response, '');
    const c = await ollama.chat({ model: MODEL, messages: [], stream: false });
    assert.equal(c.done_reason, 'load');
    assert.deepEqual(c.message, { role: 'assistant', content: '' });
    for (const keep_alive of [0, '0', '0m', '0.0s']) {
      const unload = await postRaw(srv.url + '/api/generate', JSON.stringify({ model: MODEL, keep_alive }));
      assert.equal(unload.status, 200);
      assert.equal(unload.body.done_reason, 'unload', String(keep_alive));
    }
    const load = await postRaw(srv.url + '/api/chat', JSON.stringify({ model: MODEL, messages: [], keep_alive: '5m', stream: false }));
    assert.equal(load.body.done_reason, 'load');
    const after = (await (await fetch(srv.url + '/stats')).json()).generation;
    assert.equal(after.requests_total, before.requests_total);
    assert.equal(after.generated_tokens_total, before.generated_tokens_total);
  });

  test('raw generate takes format as a grammar; repeat_last_n 0 and -1 are Ollama\'s off and whole context, for all three penalties', async () => {
    const r = await ollama.generate({ model: MODEL, prompt: 'Once upon a time', raw: true, format: 'json', stream: false, options: { temperature: 0, num_predict: 24 } });
    assert.match(r.response.trimStart(), /^[{]/);
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
    const s = await ollama.generate({ model: MODEL, prompt: 'Once', raw: true, format: schema, stream: false, options: { temperature: 0, num_predict: 40 } });
    if (s.done_reason === 'stop') assert.equal(typeof JSON.parse(s.response).n, 'number');
    else assert.match(s.response, /^[{]/);
    for (const repeat_last_n of [0, -1]) {
      const p = await ollama.generate({ model: MODEL, prompt: 'Tom', raw: true, stream: false, options: { temperature: 0, num_predict: 8, repeat_penalty: 1.3, repeat_last_n } });
      assert.equal(p.done, true, String(repeat_last_n));
    }
    // 0 turns all three penalties off, as llama.cpp's sampler does.
    const off = await ollama.generate({ model: MODEL, prompt: 'Tom', raw: true, stream: false, options: { temperature: 0, num_predict: 24, repeat_penalty: 1.5, presence_penalty: 1.5, frequency_penalty: 1, repeat_last_n: 0 } });
    const plain = await ollama.generate({ model: MODEL, prompt: 'Tom', raw: true, stream: false, options: { temperature: 0, num_predict: 24 } });
    assert.equal(off.response, plain.response);
  });

  test('list, ps, show, version', async () => {
    const tags = await ollama.list();
    assert.equal(tags.models.length, 1);
    assert.equal(tags.models[0].name, MODEL);
    assert.equal(tags.models[0].details.family, 'llama');
    assert.ok(tags.models[0].size > 0);
    const ps = await ollama.ps();
    assert.equal(ps.models[0].name, MODEL);
    const show = await ollama.show({ model: MODEL });
    assert.ok(show.template.length > 0);
    assert.ok(show.capabilities.includes('completion'));
    assert.ok(show.model_info['llama.context_length'] > 0);
    const v = await ollama.version();
    assert.match(v.version, /^\d+\.\d+\.\d+$/);
    await assert.rejects(ollama.show({ model: 'nope' }), (e) => e.status_code === 404 && /not found/.test(e.error));
  });

  test('errors are {"error": "..."} with the status', async () => {
    for (const [path, body] of [['/api/chat', {}], ['/api/chat', { messages: 'x' }], ['/api/chat', { messages: [{ role: 'user', content: 'x', images: ['abc'] }] }],
      ['/api/generate', { prompt: 'x', format: 5 }], ['/api/chat', { messages: [{ role: 'user', content: 'x' }], options: { temperature: 'hot' } }],
      ['/api/chat', { messages: [{ role: 'user', content: 'x' }], options: { repeat_last_n: -5 } }]]) {
      const r = await postRaw(srv.url + path, JSON.stringify(body));
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.deepEqual(Object.keys(r.body), ['error']);
      assert.equal(typeof r.body.error, 'string');
    }
    const bad = await postRaw(srv.url + '/api/chat', '{"messages": [');
    assert.equal(bad.status, 400);
    assert.equal(typeof bad.body.error, 'string');
    const missing = await postRaw(srv.url + '/api/pull', '{}');
    assert.equal(missing.status, 404);
    assert.equal(typeof missing.body.error, 'string');
  });
});
