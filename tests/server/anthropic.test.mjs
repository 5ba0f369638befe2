// Anthropic's Messages API end to end through the official @anthropic-ai/sdk,
// raw HTTP where the SDK cannot express a request.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startServer, getJSON, postRaw } from './lib.mjs';

const MODEL = 'stories260k';

function anthropicError(assert, body) {
  assert.equal(body.type, 'error', JSON.stringify(body));
  assert.equal(typeof body.error.type, 'string');
  assert.ok(body.error.message.length > 0);
}

describe('Anthropic Messages', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--api-key', 'sekret']);
    client = new Anthropic({ baseURL: srv.url, apiKey: 'sekret', maxRetries: 0, timeout: 60000 });
  });
  after(async () => { await srv.stop(); });

  test('messages.create: text, usage, stop reasons; the same text as chat completions', async () => {
    const messages = [{ role: 'user', content: 'Once upon a time' }];
    const m = await client.messages.create({ model: MODEL, max_tokens: 24, temperature: 0, system: 'You tell stories.', messages });
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.match(m.id, /^msg_/);
    assert.equal(m.content.length, 1);
    assert.equal(m.content[0].type, 'text');
    assert.ok(['max_tokens', 'end_turn'].includes(m.stop_reason), m.stop_reason);
    assert.equal(m.usage.output_tokens <= 24, true);
    const chat = await (await fetch(srv.url + '/v1/chat/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer sekret' },
      body: JSON.stringify({ messages: [{ role: 'system', content: 'You tell stories.' }, ...messages], max_tokens: 24, temperature: 0 }),
    })).json();
    assert.equal(m.content[0].text, chat.choices[0].message.content);
    assert.equal(m.usage.input_tokens + m.usage.cache_read_input_tokens, chat.usage.prompt_tokens);
    assert.equal(m.usage.output_tokens, chat.usage.completion_tokens);
    // The same request again reads the prompt from the prompt cache.
    const again = await client.messages.create({ model: MODEL, max_tokens: 24, temperature: 0, system: 'You tell stories.', messages });
    assert.ok(again.usage.cache_read_input_tokens > 0, JSON.stringify(again.usage));
    assert.equal(again.content[0].text, m.content[0].text);
  });

  test('stop_sequences: stop_reason stop_sequence names the one that matched', async () => {
    const base = await client.messages.create({ model: MODEL, max_tokens: 30, temperature: 0, messages: [{ role: 'user', content: 'Tell me a story.' }] });
    const text = base.content[0].text;
    const word = text.trim().split(/\s+/)[2];
    assert.ok(word, text);
    const m = await client.messages.create({ model: MODEL, max_tokens: 30, temperature: 0, stop_sequences: ['zzz', word], messages: [{ role: 'user', content: 'Tell me a story.' }] });
    assert.equal(m.stop_reason, 'stop_sequence');
    assert.equal(m.stop_sequence, word);
    assert.equal(m.content[0].text, text.slice(0, text.indexOf(word)));
  });

  test('messages.stream: the event grammar and the same text as the whole answer', async () => {
    const params = { model: MODEL, max_tokens: 20, temperature: 0, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello there' }] }] };
    const whole = await client.messages.create(params);
    const types = [];
    const stream = client.messages.stream(params);
    let text = '';
    stream.on('text', (t) => { text += t; });
    for await (const ev of stream) types.push(ev.type);
    const final = await stream.finalMessage();
    assert.equal(text, whole.content[0].text);
    assert.equal(final.content[0].text, whole.content[0].text);
    assert.equal(final.stop_reason, whole.stop_reason);
    assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
    assert.equal(types[0], 'message_start');
    assert.equal(types.at(-1), 'message_stop');
    assert.equal(types.at(-2), 'message_delta');
    assert.ok(types.includes('content_block_start') && types.includes('content_block_delta') && types.includes('content_block_stop'));
  });

  test('the raw stream: event names match their data types; ping after message_start', async () => {
    const r = await fetch(srv.url + '/v1/messages', {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'x-api-key': 'sekret' },
      body: JSON.stringify({ max_tokens: 6, stream: true, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /text\/event-stream/);
    const frames = (await r.text()).split('\n\n').filter(Boolean).map((f) => {
      const [ev, data] = f.split('\n');
      return { event: ev.replace('event: ', ''), data: JSON.parse(data.replace('data: ', '')) };
    });
    for (const f of frames) assert.equal(f.event, f.data.type);
    assert.deepEqual(frames.slice(0, 2).map((f) => f.event), ['message_start', 'ping']);
    assert.equal(frames[0].data.message.content.length, 0);
  });

  test('count_tokens equals the input tokens of the same request', async () => {
    const params = { model: MODEL, system: [{ type: 'text', text: 'Be brief.' }], messages: [{ role: 'user', content: 'What is a cat?' }] };
    const n = await client.messages.countTokens(params);
    const m = await client.messages.create({ ...params, max_tokens: 1 });
    assert.equal(n.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
  });

  test('models.list() in Anthropic\'s shape', async () => {
    const models = [];
    for await (const m of client.models.list()) models.push(m);
    assert.equal(models.length, 1);
    assert.equal(models[0].id, MODEL);
    assert.equal(models[0].type, 'model');
    assert.ok(!Number.isNaN(Date.parse(models[0].created_at)));
  });

  test('tool_use and tool_result blocks, thinking blocks: a conversation with tools is accepted', async () => {
    // stories260k's template prints no tools; the request must still parse and render.
    const m = await client.messages.create({
      model: MODEL, max_tokens: 4,
      tools: [{ name: 'get_weather', description: 'Weather in a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'I should call the tool.', signature: '' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'Sunny' }] }, { type: 'text', text: 'Thanks!' }] },
      ],
    });
    assert.equal(m.type, 'message');
  });

  test('bad requests: Anthropic\'s error shape and the SDK\'s error classes', async () => {
    await assert.rejects(client.messages.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }), (e) => {
      assert.ok(e instanceof Anthropic.BadRequestError, e.constructor.name);
      assert.match(e.message, /max_tokens/);
      return true;
    });
    const cases = [
      [{ max_tokens: 5, messages: [{ role: 'system', content: 'x' }] }, /role/],
      [{ max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] }, /image/],
      [{ max_tokens: 5, messages: [{ role: 'user', content: 'x' }], tools: [{ name: 'f' }] }, /input_schema/],
      [{ max_tokens: 5, messages: [{ role: 'user', content: 'x' }], tool_choice: { type: 'tool', name: 'nope' } }, /tools/],
      [{ max_tokens: 5, messages: [{ role: 'user', content: 'x' }], temperature: 1.5 }, /temperature/],
      [{ max_tokens: 5, messages: [{ role: 'user', content: 'x' }], stop_sequences: 'x' }, /stop_sequences/],
      [{ max_tokens: 5, messages: [] }, /messages/],
      [{ max_tokens: 5, messages: [{ role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'a' }] }] }, /tool_result/],
    ];
    for (const [body, re] of cases) {
      const r = await postRaw(srv.url + '/v1/messages', JSON.stringify(body), { 'Content-Type': 'application/json', 'x-api-key': 'sekret' });
      assert.equal(r.status, 400, JSON.stringify(body));
      anthropicError(assert, r.body);
      assert.equal(r.body.error.type, 'invalid_request_error');
      assert.match(r.body.error.message, re);
    }
    const bad = await postRaw(srv.url + '/v1/messages', '{"max_tokens": 5, ', { 'Content-Type': 'application/json', 'x-api-key': 'sekret' });
    assert.equal(bad.status, 400);
    anthropicError(assert, bad.body);
  });

  test('x-api-key: a wrong or missing key is a 401 authentication_error', async () => {
    for (const headers of [{}, { 'x-api-key': 'wrong' }]) {
      const r = await postRaw(srv.url + '/v1/messages', JSON.stringify({ max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
        { 'Content-Type': 'application/json', ...headers });
      assert.equal(r.status, 401);
      anthropicError(assert, r.body);
      assert.equal(r.body.error.type, 'authentication_error');
    }
    const wrong = new Anthropic({ baseURL: srv.url, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(wrong.messages.create({ model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'x' }] }),
      (e) => e instanceof Anthropic.AuthenticationError);
  });
});
