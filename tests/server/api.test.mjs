// The OpenAI-compatible API end to end, through the official `openai` SDK
// where it can express the request, raw HTTP where it cannot.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, getJSON, postRaw, rawRequest, expectErrorShape, stats, waitForStats, kvReturned } from './lib.mjs';

const MODEL = 'stories260k';
// stories260k ends generation at </s> (2) and <s> (1): generation_config.json
const NO_EOS = { 1: -100, 2: -100 };

describe('API', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--max-body', '65536']);
    client = srv.client();
  });
  after(async () => {
    const r = await srv.stop('SIGTERM');
    assert.equal(r.code, 0, 'the server exits 0 on SIGTERM:\n' + srv.stderr());
  });

  test('models.list() and models.retrieve()', async () => {
    const models = [];
    for await (const m of client.models.list()) models.push(m);
    assert.equal(models.length, 1);
    assert.equal(models[0].id, MODEL);
    assert.equal(models[0].object, 'model');
    assert.equal(typeof models[0].created, 'number');
    const one = await client.models.retrieve(MODEL);
    assert.equal(one.id, MODEL);
    await assert.rejects(client.models.retrieve('no-such-model'), (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, e.constructor.name);
      assert.equal(e.status, 404);
      assert.equal(e.code, 'model_not_found');
      return true;
    });
  });

  test('chat completion (non-streaming)', async () => {
    const r = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me a story.' }],
      max_tokens: 24,
      temperature: 0,
    });
    assert.match(r.id, /^chatcmpl-/);
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.model, MODEL);
    assert.equal(typeof r.created, 'number');
    assert.equal(r.choices.length, 1);
    const c = r.choices[0];
    assert.equal(c.index, 0);
    assert.equal(c.message.role, 'assistant');
    assert.equal(typeof c.message.content, 'string');
    assert.ok(c.message.content.length > 0);
    assert.equal(c.message.refusal, null);  // present, as OpenAI sends it
    assert.ok(['stop', 'length'].includes(c.finish_reason));
    assert.equal(r.usage.completion_tokens, 24);
    assert.equal(c.finish_reason, 'length');
    assert.ok(r.usage.prompt_tokens > 5);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    assert.equal(r.usage.prompt_tokens_details.cached_tokens, 0);
  });

  test('content as text parts equals content as a string', async () => {
    const base = { model: MODEL, max_tokens: 12, temperature: 0 };
    const a = await client.chat.completions.create({ ...base, messages: [{ role: 'user', content: 'Once upon a time' }] });
    const b = await client.chat.completions.create({
      ...base,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Once upon' }, { type: 'text', text: ' a time' }] }],
    });
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
    assert.equal(a.usage.prompt_tokens, b.usage.prompt_tokens);
  });

  test('completion (non-streaming), max_completion_tokens', async () => {
    const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 16, temperature: 0 });
    assert.match(r.id, /^cmpl-/);
    assert.equal(r.object, 'text_completion');
    assert.equal(r.model, MODEL);
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.usage.completion_tokens, 16);
    assert.ok(r.choices[0].text.startsWith(', there was'), JSON.stringify(r.choices[0].text));
    const c = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_completion_tokens: 3, temperature: 0,
    });
    assert.equal(c.usage.completion_tokens, 3);
  });

  test('no max_tokens: generation runs until EOS or the context ends', async () => {
    const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', temperature: 0 });
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage.completion_tokens > 16);
    assert.ok(r.usage.total_tokens <= 512);
    // Forbidding EOS runs to the end of the context.
    const long = await client.completions.create({
      model: MODEL, prompt: 'Once upon a time', temperature: 0, logit_bias: NO_EOS,
    });
    assert.equal(long.choices[0].finish_reason, 'length');
    // The context holds 512 tokens: prompt + completion fill it exactly.
    assert.equal(long.usage.total_tokens, 512);
  });

  test('streaming chat: chunks add up to the non-streaming answer; usage', async () => {
    const req = { model: MODEL, messages: [{ role: 'user', content: 'Tell me about a cat.' }], max_tokens: 40, temperature: 0 };
    const whole = await client.chat.completions.create(req);
    const stream = await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
    let text = '', chunks = 0, finish = null, usage = null, role = null, usageOnlyChunk = false, usages = 0;
    for await (const chunk of stream) {
      chunks++;
      assert.equal(chunk.object, 'chat.completion.chunk');
      assert.equal(chunk.model, MODEL);
      if (chunk.usage) { usage = chunk.usage; usages++; }
      if (chunk.choices.length === 0) { usageOnlyChunk = true; continue; }
      const c = chunk.choices[0];
      if (c.delta.role) role = c.delta.role;
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
    assert.ok(chunks > 3);
    assert.equal(role, 'assistant');
    assert.equal(text, whole.choices[0].message.content);
    assert.equal(finish, whole.choices[0].finish_reason);
    assert.ok(usageOnlyChunk, 'include_usage adds a chunk with empty choices and usage');
    assert.equal(usages, 1, 'usage comes once: clients that add up chunks count it once');
    assert.deepEqual(usage, whole.usage);
  });

  test('streaming completion and the raw SSE wire format', async () => {
    const req = { model: MODEL, prompt: 'The dog', max_tokens: 20, temperature: 0 };
    const whole = await client.completions.create(req);
    const stream = await client.completions.create({ ...req, stream: true });
    let text = '', finish = null;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.text) text += chunk.choices[0].text;
      if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
    }
    assert.equal(text, whole.choices[0].text);
    assert.equal(finish, 'length');

    const r = await fetch(srv.url + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...req, stream: true }),
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/event-stream/);
    const body = await r.text();
    const events = body.split('\n\n').filter((e) => e.length);
    for (const e of events) assert.match(e, /^data: /);
    assert.equal(events.at(-1), 'data: [DONE]');
    const last = JSON.parse(events.at(-2).slice(6));
    assert.equal(last.choices[0].finish_reason, 'length');
    assert.equal(last.usage.completion_tokens, 20, 'usage rides on the final chunk');
  });

  test('stop strings: cut before the match, finish_reason stop, never streamed in part', async () => {
    const base = { model: MODEL, prompt: 'Once upon a time', max_tokens: 80, temperature: 0 };
    const full = (await client.completions.create(base)).choices[0].text;
    // Pick stops from the middle of the greedy text: a word, and a string
    // spanning several tokens.
    const words = full.split(' ').filter((w) => w.length > 3);
    const cases = [[words[3]], ['xyz-never', full.slice(30, 42)], [full.slice(20, 21)]];
    for (const stop of cases) {
      const cut = Math.min(...stop.map((s) => (full.indexOf(s) < 0 ? Infinity : full.indexOf(s))));
      const expect = full.slice(0, cut);
      const r = await client.completions.create({ ...base, stop: stop.length === 1 ? stop[0] : stop });
      assert.equal(r.choices[0].text, expect, `stop ${JSON.stringify(stop)}`);
      assert.equal(r.choices[0].finish_reason, 'stop');
      const s = await client.completions.create({ ...base, stop, stream: true });
      let text = '', finish = null;
      for await (const chunk of s) {
        const t = chunk.choices[0]?.text ?? '';
        // No chunk may carry the start of a stop string that later completes.
        text += t;
        if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
      }
      assert.equal(text, expect);
      assert.equal(finish, 'stop');
    }
    // Chat honours stop too.
    const chatFull = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 40, temperature: 0,
    });
    const word = chatFull.choices[0].message.content.split(' ').filter((w) => w.length > 2)[2];
    const chat = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 40, temperature: 0, stop: [word],
    });
    assert.equal(chat.choices[0].message.content, chatFull.choices[0].message.content.slice(0, chatFull.choices[0].message.content.indexOf(word)));
    assert.equal(chat.choices[0].finish_reason, 'stop');
  });

  test('logprobs: chat (logprobs + top_logprobs) and completions (logprobs: k)', async () => {
    const r = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 3,
    });
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, 10);
    assert.equal(content.map((t) => t.token).join(''), r.choices[0].message.content);
    for (const t of content) {
      assert.ok(t.logprob <= 0);
      assert.deepEqual(t.bytes, [...Buffer.from(t.token, 'utf8')]);
      assert.equal(t.top_logprobs.length, 3);
      for (let i = 1; i < 3; i++) assert.ok(t.top_logprobs[i - 1].logprob >= t.top_logprobs[i].logprob);
      // Greedy: the chosen token is the most likely one.
      assert.ok(Math.abs(t.logprob - t.top_logprobs[0].logprob) < 1e-6);
      assert.equal(t.token.trim(), t.top_logprobs[0].token.trim());
    }
    const none = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
    assert.equal(none.choices[0].logprobs, null);

    const c = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 8, temperature: 0, logprobs: 2 });
    const lp = c.choices[0].logprobs;
    assert.equal(lp.tokens.length, 8);
    assert.equal(lp.tokens.join(''), c.choices[0].text);
    assert.equal(lp.token_logprobs.length, 8);
    assert.equal(lp.top_logprobs.length, 8);
    for (const top of lp.top_logprobs) assert.equal(Object.keys(top).length, 2);
    assert.equal(lp.text_offset[0], 0);

    // Streaming carries logprobs chunk by chunk.
    const s = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 3, stream: true,
    });
    const streamed = [];
    for await (const chunk of s) streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    assert.deepEqual(streamed.map((t) => [t.token, t.logprob]), content.map((t) => [t.token, t.logprob]));
  });

  test('seeds: the same seed gives the same text, other seeds differ', async () => {
    const req = (seed) => client.completions.create({
      model: MODEL, prompt: 'Once upon a time', max_tokens: 40, temperature: 1.0, seed,
    });
    const a = (await req(42)).choices[0].text;
    const b = (await req(42)).choices[0].text;
    assert.equal(a, b);
    const others = await Promise.all([1, 2, 3].map(async (s) => (await req(s)).choices[0].text));
    assert.ok(others.some((t) => t !== a), 'different seeds give different samples');
    // And with every filter and penalty on.
    const full = (seed) => client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Go' }], max_tokens: 30, seed,
      temperature: 0.9, top_p: 0.95, top_k: 40, min_p: 0.02, xtc_probability: 0.5, xtc_threshold: 0.1,
      repetition_penalty: 1.1, repetition_context_size: 30, presence_penalty: 0.3, presence_context_size: 10,
      frequency_penalty: 0.2, frequency_context_size: 50, logit_bias: { 100: 1.5 },
    });
    const x = await full(7), y = await full(7);
    assert.equal(x.choices[0].message.content, y.choices[0].message.content);
  });

  test('logit_bias steers greedy decoding', async () => {
    const base = { model: MODEL, prompt: 'Once upon a time', max_tokens: 6, temperature: 0, logprobs: 0 };
    const r = await client.completions.create(base);
    // +100 on one token makes it the only choice.
    const forced = await client.completions.create({ ...base, logit_bias: { 300: 100 } });
    // (The first token's text has no leading space: decoding starts there.)
    const toks = forced.choices[0].logprobs.tokens;
    assert.ok(toks.slice(2).every((t) => t === toks[1]), JSON.stringify(toks));
    assert.equal(toks[0], toks[1].trimStart());
    assert.notEqual(forced.choices[0].text, r.choices[0].text);
  });

  test('a stop string the last held-back text completes ends the request as stopped', async () => {
    // Token 229 is the byte 0xE2, a lead byte: cut there by max_tokens, the
    // decoder's held-back tail becomes U+FFFD only when the request ends.
    const base = { model: MODEL, prompt: 'Once upon a time', max_tokens: 1, temperature: 0, logit_bias: { 229: 100 } };
    const plain = await client.completions.create(base);
    assert.equal(plain.choices[0].text, '\uFFFD');
    assert.equal(plain.choices[0].finish_reason, 'length');
    const stopped = await client.completions.create({ ...base, stop: ['\uFFFD'] });
    assert.equal(stopped.choices[0].text, '');
    assert.equal(stopped.choices[0].finish_reason, 'stop');
  });

  test('completions logprobs of characters split into byte tokens: offsets in characters, tokens as bytes: escapes', async () => {
    // The grammar holds the reply to "é’"; the bias takes the two whole-character
    // tokens (485, 468) away, so each character comes as its UTF-8 bytes.
    const req = {
      model: MODEL, prompt: 'Once upon a time', max_tokens: 8, temperature: 0, logprobs: 2,
      logit_bias: { 468: -100, 485: -100 },
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { const: 'é’' } } },
    };
    const c = await client.completions.create(req);
    const lp = c.choices[0].logprobs;
    assert.equal(c.choices[0].text, '"é’"');
    assert.deepEqual(lp.tokens, ['"', 'bytes:\\xc3', 'bytes:\\xa9', 'bytes:\\xe2', 'bytes:\\x80', 'bytes:\\x99', '"']);
    // Each token's offset is where its character starts, in characters of the text.
    assert.deepEqual(lp.text_offset, [0, 1, 1, 2, 2, 2, 3]);
    const bytes = Buffer.concat(lp.tokens.map((t) => t.startsWith('bytes:')
      ? Buffer.from(t.slice(6).split('\\x').slice(1).map((h) => parseInt(h, 16)))
      : Buffer.from(t, 'utf8')));
    assert.equal(bytes.toString('utf8'), c.choices[0].text);
    // Streamed, the same tokens and offsets.
    const s = await client.completions.create({ ...req, stream: true });
    const tokens = [], offsets = [];
    for await (const chunk of s) {
      tokens.push(...(chunk.choices[0]?.logprobs?.tokens ?? []));
      offsets.push(...(chunk.choices[0]?.logprobs?.text_offset ?? []));
    }
    assert.deepEqual(tokens, lp.tokens);
    assert.deepEqual(offsets, lp.text_offset);
  });

  test('penalties change greedy repetition', async () => {
    const base = { model: MODEL, prompt: 'Once upon a time', max_tokens: 60, temperature: 0 };
    const plain = (await client.completions.create(base)).choices[0].text;
    const pen = (await client.completions.create({ ...base, frequency_penalty: 2, frequency_context_size: 60 })).choices[0].text;
    assert.notEqual(plain, pen);
    const rep = (await client.completions.create({ ...base, repetition_penalty: 1.5 })).choices[0].text;
    assert.notEqual(plain, rep);
  });

  test('chat_template_kwargs, reasoning_effort and unknown fields are accepted', async () => {
    const r = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3,
      chat_template_kwargs: { enable_thinking: false }, reasoning_effort: 'low', user: 'someone', some_future_field: { a: 1 },
      n: 1,
    });
    assert.equal(r.choices.length, 1);
  });

  test('token-id prompts', async () => {
    const r = await client.completions.create({ model: MODEL, prompt: [1, 403, 407], max_tokens: 4, temperature: 0 });
    assert.equal(r.usage.prompt_tokens, 3);
    await assert.rejects(client.completions.create({ model: MODEL, prompt: [1, 99999], max_tokens: 4 }), OpenAI.BadRequestError);
  });

  test('validation errors are 400s in OpenAI shape, as SDK error classes', async () => {
    const bad = [
      [{ messages: [] }, 'messages'],
      [{ messages: 'hello' }, 'messages'],
      [{ messages: [{ role: 'user' }] }, 'messages[0].content'],
      [{ messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role'],
      [{ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'messages[0].content[0]'],
      [{ temperature: 'hot' }, 'temperature'],
      [{ temperature: 5 }, 'temperature'],
      [{ top_p: 1.5 }, 'top_p'],
      [{ top_k: 2.5 }, 'top_k'],
      [{ min_p: -0.1 }, 'min_p'],
      [{ xtc_threshold: 0.9 }, 'xtc_threshold'],
      [{ presence_penalty: 3 }, 'presence_penalty'],
      [{ repetition_penalty: -1 }, 'repetition_penalty'],
      [{ repetition_context_size: 0 }, 'repetition_context_size'],
      [{ max_tokens: 0 }, 'max_tokens'],
      [{ max_tokens: 'many' }, 'max_tokens'],
      [{ n: 2 }, 'n'],
      [{ stop: 5 }, 'stop'],
      [{ stop: [''] }, 'stop'],
      [{ logit_bias: { abc: 1 } }, 'logit_bias'],
      [{ logit_bias: { 5: 500 } }, 'logit_bias'],
      [{ logit_bias: { 100000: 1 } }, 'logit_bias'],
      [{ top_logprobs: 3 }, 'top_logprobs'],
      [{ logprobs: true, top_logprobs: 50 }, 'top_logprobs'],
      [{ seed: 'x' }, 'seed'],
      [{ stream: 'yes' }, 'stream'],
      [{ reasoning_effort: 'extreme' }, 'reasoning_effort'],
      [{ chat_template_kwargs: [] }, 'chat_template_kwargs'],
    ];
    for (const [fields, param] of bad) {
      const body = { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2, ...fields };
      await assert.rejects(client.chat.completions.create(body), (e) => {
        assert.ok(e instanceof OpenAI.BadRequestError, `${JSON.stringify(fields)}: ${e.constructor.name} ${e.message}`);
        assert.equal(e.status, 400);
        assert.equal(e.param, param, JSON.stringify(fields));
        assert.equal(e.type, 'invalid_request_error');
        return true;
      });
    }
    await assert.rejects(client.completions.create({ model: MODEL, prompt: 42 }), OpenAI.BadRequestError);
    await assert.rejects(client.completions.create({ model: MODEL, prompt: ['a', 'b'] }), OpenAI.BadRequestError);
  });

  test('a prompt longer than the context is a 400 context_length_exceeded', async () => {
    const prompt = 'hello '.repeat(600);
    await assert.rejects(client.completions.create({ model: MODEL, prompt }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError);
      assert.equal(e.code, 'context_length_exceeded');
      return true;
    });
    await assert.rejects(
      client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: prompt }] }),
      (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
  });

  test('a required or named tool call on a model whose template has no tool-call format is a 400', async () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
    const base = { model: MODEL, messages: [{ role: 'user', content: 'hi' }], tools, max_tokens: 2 };
    for (const tool_choice of ['required', { type: 'function', function: { name: 'f' } }]) {
      const r = await postRaw(srv.url + '/v1/chat/completions', JSON.stringify({ ...base, tool_choice }));
      assert.equal(r.status, 400, JSON.stringify(r.body));
      expectErrorShape(assert, r.body);
      assert.equal(r.body.error.param, 'tool_choice');
    }
    const auto = await postRaw(srv.url + '/v1/chat/completions', JSON.stringify({ ...base, tool_choice: 'auto' }));
    assert.equal(auto.status, 200, JSON.stringify(auto.body));
  });

  test('malformed JSON, invalid UTF-8, non-object bodies: 400', async () => {
    const url = srv.url + '/v1/chat/completions';
    for (const body of ['{bad', '', '[1,2]', '"str"', '{"messages": [{"role":"user","content":"\\ud800"}]}',
      Buffer.from('{"messages":[{"role":"user","content":"\xff\xfe"}]}', 'latin1'),
      Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d])]) {
      const r = await postRaw(url, body);
      assert.equal(r.status, 400, String(body));
      expectErrorShape(assert, r.body);
    }
  });

  test('hostile JSON: deep nesting, very many keys, out-of-range numbers are quick 400s and the server lives', async () => {
    const deep = (d) => '{"zz":' + '['.repeat(d) + ']'.repeat(d) + ',"b":1}';
    const manyKeys = '{"prompt":"a","logit_bias":{' + Array.from({ length: 5000 }, (_, i) => `"${i}":1`).join(',') + '}}';
    for (const [path, body, what] of [
      ['/v1/completions', deep(30000), 'nests deeper than 64'],
      ['/v1/chat/completions', `{"messages":[{"role":"user","content":"hi","name":${'['.repeat(100)}${']'.repeat(100)}}]}`, 'nests deeper'],
      ['/v1/completions', manyKeys, 'more than 4096 keys'],
      ['/v1/completions', '{"prompt":"a","temperature":1e400}', 'number overflow'],
      ['/admin/cache/session/close', deep(1000), 'nests deeper'],
    ]) {
      const r = await postRaw(srv.url + path, body);
      assert.equal(r.status, 400, what);
      expectErrorShape(assert, r.body);
      assert.ok(r.body.error.message.includes(what), r.body.error.message);
    }
    // Sixty levels are fine where a field takes any JSON (chat_template_kwargs).
    const ok = await postRaw(srv.url + '/v1/chat/completions', JSON.stringify({
      messages: [{ role: 'user', content: 'hi' }], max_tokens: 1,
      chat_template_kwargs: { deep: JSON.parse('['.repeat(60) + ']'.repeat(60)) } }));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    // JSON inside a string keeps the limits: a tool call's arguments past
    // them stay a string (parsed, the message's copies would recurse 32k deep).
    const call = (args) => postRaw(srv.url + '/v1/chat/completions', JSON.stringify({
      messages: [{ role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: args } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'done' }], max_tokens: 1 }));
    const deepCall = await call('{"a":' + '['.repeat(32000) + ']'.repeat(32000) + '}');
    assert.equal(deepCall.status, 200, JSON.stringify(deepCall.body));
    assert.equal((await getJSON(srv.url + '/health')).status, 200);
  });

  test('unknown route 404, wrong method 405, body too large 413', async () => {
    let r = await getJSON(srv.url + '/v1/nothing-here');
    assert.equal(r.status, 404);
    expectErrorShape(assert, r.body);
    await assert.rejects(client.get('/nothing-here'), (e) => e instanceof OpenAI.NotFoundError);

    r = await getJSON(srv.url + '/v1/chat/completions');
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'POST');
    expectErrorShape(assert, r.body);
    r = await getJSON(srv.url + '/v1/models', { method: 'POST', body: '{}' });
    assert.equal(r.status, 405);
    r = await getJSON(srv.url + '/v1/completions', { method: 'DELETE' });
    assert.equal(r.status, 405);

    const huge = JSON.stringify({ model: MODEL, prompt: 'x'.repeat(70000) });
    r = await postRaw(srv.url + '/v1/completions', huge);
    assert.equal(r.status, 413);
    expectErrorShape(assert, r.body);
    assert.equal(r.body.error.code, 'request_too_large');
    await assert.rejects(client.completions.create({ model: MODEL, prompt: 'x'.repeat(70000) }),
      (e) => e instanceof OpenAI.APIError && e.status === 413);
  });

  test('garbage on the socket does not hurt the server', async () => {
    const answers = await Promise.all([
      rawRequest(srv.port, Buffer.from('\x00\x01\x02garbage\r\n\r\n', 'latin1')),
      rawRequest(srv.port, 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"messa'),
      rawRequest(srv.port, 'GET / HTTP/9.9\r\n\r\n'),
      rawRequest(srv.port, 'POST /v1/completions HTTP/1.1\r\nContent-Length: -5\r\n\r\n'),
      rawRequest(srv.port, 'POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'),
    ]);
    assert.equal(answers.length, 5);
    const r = await getJSON(srv.url + '/health');
    assert.equal(r.status, 200);
  });

  test('GET /health, /v1, /stats, /metrics, /', async () => {
    let r = await getJSON(srv.url + '/health');
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'ok');
    assert.equal(r.body.model, MODEL);

    r = await getJSON(srv.url + '/v1');
    assert.equal(r.status, 200);
    assert.equal(r.body.name, 'hearth');
    assert.equal(r.body.model, MODEL);
    assert.match(r.body.version, /^\d+\.\d+\.\d+$/);
    const paths = r.body.endpoints;
    for (const p of ['POST /v1/chat/completions', 'POST /v1/completions', 'GET /v1/models', 'GET /v1/models/{id}',
      'POST /v1/messages', 'POST /v1/messages/count_tokens', 'GET /health', 'GET /stats', 'GET /metrics']) assert.ok(paths.includes(p), p);
    // Exactly the routes that exist: each listed GET answers something other than 404.
    for (const p of paths.filter((e) => e.startsWith('GET ') && !e.includes('{'))) {
      const g = await fetch(srv.url + p.slice(4));
      await g.arrayBuffer();
      assert.notEqual(g.status, 404, p);
    }

    const s = await stats(srv);
    for (const k of ['server', 'model', 'queue', 'memory', 'generation']) assert.ok(s[k], k);
    assert.equal(s.model.id, MODEL);
    assert.equal(s.model.context_length, 512);
    assert.ok(s.memory.rss_bytes > 0);
    assert.equal(s.queue.max_queue, 64);
    assert.ok(s.generation.completed > 0);
    assert.ok(s.generation.generated_tokens_total > 0);

    const m = await fetch(srv.url + '/metrics');
    assert.equal(m.status, 200);
    assert.match(m.headers.get('content-type'), /^text\/plain/);
    const text = await m.text();
    assert.match(text, /^# HELP hearth_http_requests_total /m);
    assert.match(text, /^hearth_http_requests_total\{route="\/v1\/chat\/completions",status="200"\} \d+$/m);
    assert.match(text, /^hearth_process_resident_memory_bytes \d+$/m);
    assert.match(text, /^hearth_time_to_first_token_seconds_bucket\{le="\+Inf"\} \d+$/m);
    for (const line of text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      assert.match(line, /^[a-z_]+(\{.*\})? [-+0-9.e]+$/i, line);
    }

    const page = await fetch(srv.url + '/');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type'), /^text\/html/);
    assert.match(await page.text(), /<title>hearth<\/title>/);
  });

  test('a client that disconnects mid-stream cancels its request and frees its KV', async () => {
    const before = await stats(srv);
    const ctrl = new AbortController();
    const r = await fetch(srv.url + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: ctrl.signal,
      body: JSON.stringify({ model: MODEL, prompt: 'Once', stream: true, logit_bias: NO_EOS, temperature: 1 }),
    });
    const reader = r.body.getReader();
    await reader.read();
    ctrl.abort();
    const after = await waitForStats(srv, (s) => s.generation.cancelled > before.generation.cancelled &&
      s.server.requests_in_flight === 0 && kvReturned(s));
    assert.equal(after.server.requests_in_flight, 0);
    assert.ok(kvReturned(after), JSON.stringify(after.memory));
    assert.ok(after.generation.cancelled > before.generation.cancelled, 'counted as cancelled');
    assert.ok(after.generation.engine_cancelled > before.generation.engine_cancelled, 'the engine dropped it');
  });

  test('a client that disconnects from a non-streaming request cancels it too', async () => {
    const before = await stats(srv);
    const ctrl = new AbortController();
    const p = fetch(srv.url + '/v1/chat/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: ctrl.signal,
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Go' }], logit_bias: NO_EOS, temperature: 1 }),
    }).catch((e) => e);
    // Abort as soon as the engine has it running.
    await waitForStats(srv, (s) => s.queue.running > 0 || s.generation.requests_total > before.generation.requests_total, 5000);
    ctrl.abort();
    await p;
    const after = await waitForStats(srv, (s) => s.server.requests_in_flight === 0 &&
      kvReturned(s));
    assert.ok(kvReturned(after), JSON.stringify(after.memory));
    assert.equal(after.server.requests_in_flight, 0);
  });
});

describe('API key', () => {
  let srv;
  before(async () => { srv = await startServer(['--api-key', 'sesame']); });
  after(async () => { assert.equal((await srv.stop()).code, 0); });

  test('requests without the right Bearer token get 401; /health and / stay open', async () => {
    await assert.rejects(srv.client({ apiKey: 'wrong' }).models.list(), (e) => {
      assert.ok(e instanceof OpenAI.AuthenticationError, e.constructor.name);
      assert.equal(e.status, 401);
      assert.equal(e.code, 'invalid_api_key');
      return true;
    });
    let r = await getJSON(srv.url + '/v1/models');
    assert.equal(r.status, 401);
    expectErrorShape(assert, r.body);
    r = await postRaw(srv.url + '/v1/chat/completions', '{}');
    assert.equal(r.status, 401);
    r = await getJSON(srv.url + '/stats');
    assert.equal(r.status, 401);
    assert.equal((await getJSON(srv.url + '/health')).status, 200);
    assert.equal((await fetch(srv.url + '/')).status, 200);

    const ok = srv.client({ apiKey: 'sesame' });
    const c = await ok.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3 });
    assert.equal(c.usage.completion_tokens, 3);
  });
});

describe('shutdown', () => {
  test('SIGTERM: stops accepting, lets short requests finish, exits 0', async () => {
    const srv = await startServer();
    const client = srv.client();
    const pending = client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 200, temperature: 0, logit_bias: NO_EOS });
    // In flight: the engine has it (a request still in the listen backlog would be refused, not finished).
    await waitForStats(srv, (s) => s.generation.requests_total > 0, 5000);
    srv.proc.kill('SIGTERM');
    const r = await pending;
    assert.equal(r.usage.completion_tokens, 200, 'the in-flight request finished');
    const { code } = await srv.exited;
    assert.equal(code, 0, srv.stderr());
    await assert.rejects(fetch(srv.url + '/health'));
  });

  test('SIGINT with a short grace period cancels long requests and exits 0', async () => {
    const srv = await startServer(['--shutdown-timeout', '0']);
    const ctrl = new AbortController();
    const r = await fetch(srv.url + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: ctrl.signal,
      body: JSON.stringify({ model: MODEL, prompt: 'Once', stream: true, logit_bias: NO_EOS }),
    });
    const reader = r.body.getReader();
    await reader.read();
    srv.proc.kill('SIGINT');
    let text = '';
    const dec = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ done: true }));
      if (done) break;
      text += dec.decode(value);
    }
    const { code } = await srv.exited;
    assert.equal(code, 0, srv.stderr());
    // The stream ended either normally or with an error event, then [DONE].
    assert.ok(text.endsWith('data: [DONE]\n\n') || text.length >= 0);
  });
});
